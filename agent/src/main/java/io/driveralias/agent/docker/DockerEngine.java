package io.driveralias.agent.docker;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.DockerApiVersions;
import io.driveralias.agent.core.LruMap;
import io.driveralias.agent.core.Printable;
import io.driveralias.agent.fs.ProcessStartTime;
import io.driveralias.agent.live.ContainerRuntime;
import io.driveralias.agent.live.ContainerRuntimeException;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Docker's Engine API over docker-java's zerodep transport: plain HTTP requests on the
 * daemon's socket, each answer read as it streams in with Jackson's parser, bounded, and only
 * for the fields the agent uses (no tree of the whole answer). The API version is negotiated
 * with the daemon at every (re)connect (see {@link DockerApiVersions}), or fixed by the operator
 * ({@code --docker-api-version}), which the daemon then has to accept.
 *
 * <p>Where the agent reaches the containerd Docker runs its containers on ({@link ContainerdLink}),
 * it also reads from there, in Docker's namespace and for Docker's containers only: the layers of
 * a container kept in containerd's image store (Docker 29's default storage), and the moment each
 * container's process exists ({@code /tasks/create}, merged into Docker's event stream), which
 * Docker never tells. A container's start is its process's, as the kernel records it
 * ({@link ProcessStarts}), wherever the agent sees its process.
 */
public final class DockerEngine implements ContainerRuntime {

    /** Inspect output carries user-chosen labels and env: bounded. */
    private static final int MAX_RESPONSE = JsonReading.MAX_ANSWER;
    /** Thousands of containers, each listed with its labels, ports and mounts. */
    private static final long MAX_LIST = 256L << 20;
    private static final Pattern CONTAINER_REF = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.-]{0,254}");
    private static final Pattern SINCE = Pattern.compile("[0-9]{1,19}(\\.[0-9]{1,9})?");
    private static final String EVENT_FILTERS = query(
            "{\"type\":[\"container\"],\"event\":[\"create\",\"start\",\"die\",\"destroy\"]}");
    private static final String RUNNING = query("{\"status\":[\"running\"]}");
    static final Duration PING_TIMEOUT = Duration.ofSeconds(2);

    /**
     * @param dockerHost         Docker's endpoint
     * @param apiVersion         speak this version instead of negotiating (e.g. "1.24")
     * @param gpuRuntimes        the OCI runtimes, as Docker names them, that add the driver's files to a
     *                           container whose {@code NVIDIA_VISIBLE_DEVICES} asks for them
     * @param containerd         Docker's containerd: {@code auto}, {@code off} or {@code unix:///path}
     * @param connector          opens Docker's namespace in a containerd
     * @param startTimes         the host's processes' start times
     */
    public record Settings(String dockerHost, Optional<String> apiVersion, Set<String> gpuRuntimes, String containerd,
                           DockerContainerd.Connector connector, ProcessStartTime startTimes) {
        public Settings {
            gpuRuntimes = Set.copyOf(gpuRuntimes);
        }
    }

    private final String host;
    private final DockerApi api;
    private final Optional<String> forcedVersion;
    private volatile String version;
    /** Docker's data directory, storage and containerd, from {@code /info} at each (re)connect. */
    private volatile DaemonInfo daemon = DaemonInfo.UNKNOWN;
    /** Whether this daemon's {@code StartedAt} comes before its containers' processes are made. */
    private volatile boolean stampsBeforeProcess;
    /** The runtime of a container whose HostConfig names none (from {@code /info}), and NVIDIA's runtimes. */
    private volatile ContainerInspectParser.Runtimes runtimes;
    private final Set<String> gpuRuntimes;
    private final ContainerdLink containerd;
    private final ProcessStarts starts;
    /**
     * Each container's description without its process, from its creation: what its process's
     * creation reuses ({@link #describeStarting}). A few KiB each, bounded; dropped when removed.
     */
    private final Map<String, ContainerInfo> described = Collections.synchronizedMap(new LruMap<>(1024));

    private DockerEngine(Settings settings, DockerApi api) {
        this.host = settings.dockerHost();
        this.api = api;
        this.forcedVersion = settings.apiVersion();
        this.gpuRuntimes = settings.gpuRuntimes();
        this.runtimes = new ContainerInspectParser.Runtimes("runc", this.gpuRuntimes);
        this.containerd = new ContainerdLink(settings.containerd(), settings.dockerHost(), settings.connector());
        this.starts = new ProcessStarts(settings.startTimes());
    }

    public static DockerEngine create(Settings settings) {
        settings.apiVersion().filter(v -> !DockerApiVersions.isSupported(v)).ifPresent(v -> {
            throw new IllegalArgumentException("Docker API " + v + " is not supported");
        });
        return new DockerEngine(settings, DockerApi.connect(settings.dockerHost()));
    }

    /** A frozen daemon still accepts connections: only a deadline over the whole call tells. */
    @Override
    public boolean ping() {
        return DockerPing.ping(URI.create(host), PING_TIMEOUT);
    }

    @Override
    public String name() {
        return "docker";
    }

    @Override
    public String endpoint() {
        return host;
    }

    @Override
    public String connect() throws ContainerRuntimeException {
        return "API " + negotiate();
    }

    /** Agrees on the API version with the daemon and learns its layout; returns the version. */
    public String negotiate() throws ContainerRuntimeException {
        DaemonHandshake handshake = DaemonHandshake.with(api, forcedVersion, MAX_RESPONSE);
        version = handshake.version();
        stampsBeforeProcess = handshake.stampsBeforeProcess();
        DaemonInfo info = handshake.info();
        this.daemon = info;
        runtimes = new ContainerInspectParser.Runtimes(info.defaultRuntime(), gpuRuntimes);
        if (info != DaemonInfo.UNKNOWN) {
            containerd.refresh(info);
        }
        return version;
    }

    /** The version agreed, negotiating first if none is yet. */
    public String apiVersion() throws ContainerRuntimeException {
        String v = version;
        return v != null ? v : negotiate();
    }

    @Override
    public ContainerInfo describe(String idOrName) throws ContainerRuntimeException {
        if (!CONTAINER_REF.matcher(idOrName).matches()) {
            throw new ContainerRuntimeException("not a container id or name: " + Printable.of(idOrName));
        }
        String path = "/v" + apiVersion() + "/containers/" + idOrName + "/json";
        ContainerInspectParser.Runtimes known = runtimes;
        Optional<ContainerInfo> inspected = api.readOrNotFound(path, MAX_RESPONSE, p -> ContainerInspectParser.parse(p, known));
        ContainerInfo info = inspected.orElseThrow(() -> new ContainerRuntimeException.NoSuchContainer(idOrName));
        if (!info.running() && info.startedAt().isEmpty() && info.overlay().isEmpty()) {
            // Created, in containerd's image store: its layers are containerd's to tell.
            info = info.toBuilder().overlay(LayerStore.imageStoreLayers(daemon, containerd.current(), info.id(), info.storage()))
                    .build();
        }
        info = withProcessStart(info);
        described.put(info.id(), info.toBuilder().running(false).pid(0).startedAt(Optional.empty()).build());
        return info;
    }

    /**
     * A container's start as its process's: the kernel's record where this host's processes are
     * visible (the same instant whether the agent learnt of the process from containerd's event,
     * from an inspect while it ran, or remembers it once it exited), else Docker's {@code StartedAt},
     * which Docker 26 and later stamp before the process is made and older versions after it started.
     */
    private ContainerInfo withProcessStart(ContainerInfo info) {
        Optional<Instant> process = Optional.empty();
        if (info.running() && info.pid() > 0) {
            process = starts.ofProcess(info.id(), info.pid());
        } else if (info.startedAt().isPresent()) {
            process = starts.ofEnded(info.id(), info.startedAt().get());
        }
        return process.isPresent() ? info.toBuilder().startedAt(process).startBeforeProcess(true).build()
                : info.toBuilder().startBeforeProcess(stampsBeforeProcess || info.startedAt().isEmpty()).build();
    }

    /**
     * The container whose process containerd just made ({@code /tasks/create}): its description
     * from its creation, else from Docker's list and its own files (never inspect, which waits
     * until the start is over), with that process, whose cgroup the caller checks.
     */
    @Override
    public Optional<ContainerInfo> describeStarting(String id, int pid) {
        if (pid <= 0 || !CONTAINER_REF.matcher(id).matches()) {
            return Optional.empty();
        }
        ContainerInfo known = described.get(id);
        if (known == null) {
            try {
                known = peek(id, false).orElse(null);
            } catch (ContainerRuntimeException e) {
                return Optional.empty();
            }
        }
        if (known == null) {
            return Optional.empty();
        }
        ContainerInfo base = known;
        return starts.ofProcess(id, pid).map(started -> base.toBuilder().running(true).pid(pid).startedAt(Optional.of(started))
                .startBeforeProcess(true).build());
    }

    @Override
    public Optional<ContainerInfo> peekCreated(String id) throws ContainerRuntimeException {
        return peek(id, true);
    }

    /**
     * A container described from Docker's list and its own files, never waiting on a start in
     * progress; {@code created}: only a container that is created and never started, and only
     * where its root's layers are found (the early path writes there) or where Docker's containerd
     * will say when its process exists (its start path then runs before the program does, and a
     * create that waited on inspect would hold the container all through its start). Empty where
     * that cannot be told: inspect then serves.
     */
    private Optional<ContainerInfo> peek(String id, boolean created) throws ContainerRuntimeException {
        DaemonInfo d = daemon;
        if (!d.rootDir().startsWith("/") || !CONTAINER_REF.matcher(id).matches()) {
            return Optional.empty();
        }
        Optional<ContainerInfo.OverlayLayers> layers = LayerStore.createdLayers(d, containerd.current(), id);
        if (created && layers.isEmpty() && containerd.current().isEmpty()) {
            return Optional.empty();
        }
        String path = "/v" + apiVersion() + "/containers/json?all=1&filters=" + query("{\"id\":[\"" + id + "\"]}");
        Optional<ContainerInspectParser.Listed> listed = api.read(path, MAX_RESPONSE, p -> ContainerInspectParser.find(p, id, created));
        if (listed.isEmpty()) {
            return Optional.empty();
        }
        Optional<ContainerInfo> info = ContainerFiles.describe(listed.get(), d.rootDir(), d.driver(), layers, runtimes);
        info.ifPresent(i -> described.put(i.id(), i));
        return info;
    }

    @Override
    public boolean runsPod(String podUid) throws ContainerRuntimeException {
        String path = "/v" + apiVersion() + "/containers/json?filters="
                + query("{\"label\":[\"io.kubernetes.pod.uid=" + podUid + "\"]}");
        return !api.readBody(path, MAX_RESPONSE, DockerEngine::ids).isEmpty();
    }

    @Override
    public List<String> runningContainerIds() throws ContainerRuntimeException {
        String path = "/v" + apiVersion() + "/containers/json?filters=" + RUNNING;
        return api.readBody(path, MAX_LIST, DockerEngine::ids).reversed();
    }

    /** The {@code Id} of each listed container (Docker lists the newest first); nothing else is read. */
    static List<String> ids(InputStream json) throws IOException {
        List<String> ids = new ArrayList<>();
        try (JsonParser p = JsonReading.parser(json)) {
            if (p.nextToken() != JsonToken.START_ARRAY) {
                throw new IOException("not a list of containers");
            }
            for (JsonToken t = p.nextToken(); t == JsonToken.START_OBJECT; t = p.nextToken()) {
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String name = p.currentName();
                    if (p.nextToken() == JsonToken.VALUE_STRING && name.equals("Id")) {
                        ids.add(p.getText());
                    } else {
                        p.skipChildren();
                    }
                }
            }
        }
        return ids;
    }

    @Override
    public EventStream events(Optional<String> since) throws ContainerRuntimeException {
        String path = "/v" + apiVersion() + "/events?filters=" + EVENT_FILTERS
                + since.filter(s -> SINCE.matcher(s).matches()).map(s -> "&since=" + s).orElse("");
        EventStream dockers = api.events(path);
        Optional<DockerContainerd> c = containerd.current();
        EventStream events = c.isEmpty() ? dockers : MergedEvents.start(dockers, c.get()::processCreations, c.get().address());
        return events.forgettingRemoved(described::remove);
    }

    private static String query(String json) {
        return URLEncoder.encode(json, StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        containerd.close();
        api.close();
    }
}
