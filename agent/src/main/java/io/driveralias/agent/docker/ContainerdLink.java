package io.driveralias.agent.docker;

import io.driveralias.agent.core.Printable;
import io.driveralias.agent.live.ContainerRuntimeException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The containerd Docker runs its containers on, found at each (re)connect to Docker and kept: as
 * {@code --docker-containerd-address} names it, else ({@code auto}) where an operator would look.
 * First where Docker says ({@code /info}'s {@code Containerd.Address}, Docker 27 and later), then
 * beside Docker's own socket, as packages lay them out: Docker's managed containerd under its exec
 * root ({@code <dir>/docker/containerd/containerd.sock}, as {@code /run/docker/containerd} is
 * beside {@code /run/docker.sock}), then the node's containerd that Debian's and Docker's own
 * packages give dockerd with {@code --containerd} ({@code <dir>/containerd/containerd.sock}). In a
 * pod whose node's {@code /run} is mounted elsewhere ({@code /host/run}), the address Docker gives
 * is looked for there too. The first socket that answers as containerd is kept. Docker's namespace
 * there is {@code /info}'s, else {@code moby}; the kubelet's ({@code k8s.io}) is never read this way.
 */
final class ContainerdLink implements AutoCloseable {

    static final String AUTO = "auto";
    static final String OFF = "off";
    static final String DOCKER_NAMESPACE = "moby";
    private static final Logger LOG = LoggerFactory.getLogger(ContainerdLink.class);
    private static final Set<String> HOST_RUN = Set.of("/run/", "/var/run/");

    private final String setting;
    private final String dockerHost;
    private final DockerContainerd.Connector connector;
    private volatile DockerContainerd current;
    /** What was last said about the link, so that a reconnect says it again only when it changed. */
    private String said = "";

    /**
     * @param setting    {@code auto}, {@code off}, or a socket {@code unix:///path}
     * @param dockerHost Docker's endpoint: a Unix socket's directory is where the others are looked for
     */
    ContainerdLink(String setting, String dockerHost, DockerContainerd.Connector connector) {
        this.setting = setting;
        this.dockerHost = dockerHost;
        this.connector = connector;
    }

    /** The containerd found at the last (re)connect, if any. */
    Optional<DockerContainerd> current() {
        return Optional.ofNullable(current);
    }

    /** Finds (again) Docker's containerd for a daemon that answered {@code info}; says what it found when that changed. */
    synchronized void refresh(DaemonInfo info) {
        if (setting.equals(OFF)) {
            return;
        }
        String namespace = info.containerdNamespace().isEmpty() ? DOCKER_NAMESPACE : info.containerdNamespace();
        if (namespace.equals("k8s.io")) {
            say("Docker says its containers are in containerd's namespace k8s.io, the kubelet's: not read; "
                    + storageConsequence(info), true);
            drop();
            return;
        }
        List<String> candidates = candidates(info);
        DockerContainerd kept = current;
        if (kept != null && candidates.contains(kept.address()) && answers(kept).isPresent()) {
            return;
        }
        drop();
        List<String> tried = new ArrayList<>();
        for (String address : candidates) {
            if (!Files.exists(Path.of(address.substring("unix://".length())))) {
                tried.add(address + " (no socket)");
                continue;
            }
            DockerContainerd opened;
            try {
                opened = connector.open(address, namespace);
            } catch (IllegalArgumentException | IllegalStateException e) {
                tried.add(address + " (" + Printable.of(String.valueOf(e.getMessage())) + ")");
                continue;
            }
            Optional<String> version = answers(opened);
            if (version.isPresent()) {
                current = opened;
                say("reading Docker's containerd at " + address + " (" + version.get() + ", namespace " + namespace
                        + "): its tasks' creations, and its snapshots where Docker keeps images in containerd", false);
                return;
            }
            opened.close();
            tried.add(address + " (does not answer as containerd)");
        }
        say("Docker's containerd not found (" + String.join(", ", tried) + "); " + storageConsequence(info)
                + " (--docker-containerd-address names its socket)", info.imageStore() || !setting.equals(AUTO));
    }

    /** The sockets to try, in order, each {@code unix:///path}. */
    List<String> candidates(DaemonInfo info) {
        Set<String> found = new LinkedHashSet<>();
        if (!setting.equals(AUTO)) {
            found.add(setting);
            return List.copyOf(found);
        }
        Optional<String> dir = socketDirectory(dockerHost);
        String given = info.containerdAddress();
        if (given.startsWith("/")) {
            found.add("unix://" + given);
            for (String run : HOST_RUN) {
                if (given.startsWith(run) && dir.isPresent() && !(dir.get() + "/").equals(run)) {
                    found.add("unix://" + dir.get() + "/" + given.substring(run.length()));
                }
            }
        }
        dir.ifPresent(d -> {
            found.add("unix://" + d + "/docker/containerd/containerd.sock");
            found.add("unix://" + d + "/containerd/containerd.sock");
        });
        return List.copyOf(found);
    }

    /** The directory of Docker's Unix socket ({@code unix:///run/docker.sock}: {@code /run}); none for TCP. */
    static Optional<String> socketDirectory(String dockerHost) {
        if (!dockerHost.startsWith("unix:///")) {
            return Optional.empty();
        }
        String path = dockerHost.substring("unix://".length());
        int slash = path.lastIndexOf('/');
        return slash > 0 ? Optional.of(path.substring(0, slash)) : Optional.empty();
    }

    private static Optional<String> answers(DockerContainerd containerd) {
        try {
            return Optional.of(containerd.version());
        } catch (ContainerRuntimeException | RuntimeException e) {
            LOG.debug("Docker's containerd at {} does not answer: {}", containerd.address(),
                    Printable.of(String.valueOf(e.getMessage())));
            return Optional.empty();
        }
    }

    private static String storageConsequence(DaemonInfo info) {
        return info.imageStore()
                ? "Docker keeps its containers in containerd's image store (" + Printable.of(info.driver())
                        + "): their aliases are written once they run, not before their first instruction"
                : "the early path reads Docker's own files alone";
    }

    /** Logs a change of the link once: WARN where the early path is lost for it, INFO otherwise. */
    private void say(String message, boolean warn) {
        if (message.equals(said)) {
            return;
        }
        said = message;
        if (warn) {
            LOG.warn("{}", message);
        } else {
            LOG.info("{}", message);
        }
    }

    private void drop() {
        DockerContainerd d = current;
        current = null;
        if (d != null) {
            d.close();
        }
    }

    @Override
    public synchronized void close() {
        drop();
    }
}
