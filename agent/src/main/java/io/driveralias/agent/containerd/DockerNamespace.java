package io.driveralias.agent.containerd;

import com.google.protobuf.Empty;
import io.driveralias.agent.containerd.api.Mount;
import io.driveralias.agent.containerd.api.MountsRequest;
import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.Printable;
import io.driveralias.agent.docker.DockerContainerd;
import io.driveralias.agent.live.ContainerRuntime;
import io.driveralias.agent.live.ContainerRuntimeException;
import java.util.List;
import java.util.Optional;

/**
 * Docker's namespace ({@code moby}) in the containerd Docker runs its containers on, read for the
 * Docker adapter only ({@link DockerContainerd}): the snapshot of a created container's root when
 * Docker keeps its images in containerd ({@code Snapshots.Mounts}, a read), and its tasks'
 * creations ({@code /tasks/create}, with the process's pid). This namespace is never watched on
 * its own ({@code --containerd-namespace} refuses it): its containers are Docker's, described
 * through Docker. The one message sent there is the subscription's own marker
 * ({@link EventSubscription}), on a topic of the agent's that no subscriber of Docker's asks for
 * (dockerd follows {@code /tasks/*} only).
 */
public final class DockerNamespace implements DockerContainerd {

    private final String address;
    private final String namespace;
    private final ContainerdClient client;

    private DockerNamespace(String address, String namespace) {
        this.address = address;
        this.namespace = namespace;
        this.client = new ContainerdClient(ContainerdRuntime.socketPath(address), namespace);
    }

    /** Docker's containerd at {@code address} ({@code unix:///path}), namespace {@code namespace}: nothing is called yet. */
    public static DockerNamespace open(String address, String namespace) {
        if (!EventDecoder.isContainerId(namespace)) {
            throw new IllegalArgumentException("not a containerd namespace: " + Printable.of(namespace));
        }
        return new DockerNamespace(address, namespace);
    }

    @Override
    public String address() {
        return address;
    }

    @Override
    public String version() throws ContainerRuntimeException {
        return "containerd " + Printable.of(client.call(ContainerdRpc.VERSION, Empty.getDefaultInstance(),
                ContainerdRuntime.PING_DEADLINE).getVersion());
    }

    @Override
    public Optional<ContainerInfo.OverlayLayers> layers(String snapshotter, String containerId) throws ContainerRuntimeException {
        if (!EventDecoder.isContainerId(containerId) || !EventDecoder.isContainerId(snapshotter)) {
            return Optional.empty();
        }
        List<Mount> mounts;
        try {
            mounts = client.callInNamespace(ContainerdRpc.SNAPSHOT_MOUNTS, MountsRequest.newBuilder().setSnapshotter(snapshotter)
                    .setKey(containerId).build(), ContainerdRuntime.CALL_DEADLINE).getMountsList();
        } catch (ContainerdClient.NotFound e) {
            return Optional.empty();
        }
        return overlay(mounts);
    }

    /**
     * The writable and image layers of a snapshot's mounts: one {@code overlay} mount whose
     * options name an absolute {@code upperdir} and {@code lowerdir}. A snapshot without a parent
     * (a bind mount) or of another kind: none.
     */
    static Optional<ContainerInfo.OverlayLayers> overlay(List<Mount> mounts) {
        if (mounts.size() != 1 || !mounts.getFirst().getType().equals("overlay")) {
            return Optional.empty();
        }
        String upper = "";
        String lower = "";
        for (String option : mounts.getFirst().getOptionsList()) {
            if (option.startsWith("upperdir=")) {
                upper = option.substring("upperdir=".length());
            } else if (option.startsWith("lowerdir=")) {
                lower = option.substring("lowerdir=".length());
            }
        }
        if (!upper.startsWith("/") || !lower.startsWith("/")) {
            return Optional.empty();
        }
        return Optional.of(new ContainerInfo.OverlayLayers(upper, lower, ""));
    }

    @Override
    public ContainerRuntime.EventStream processCreations() throws ContainerRuntimeException {
        return EventSubscription.open(client, namespace)
                .filtered(e -> e.action() == ContainerRuntime.Action.PROCESS_CREATED && e.pid() > 0);
    }

    @Override
    public void close() {
        client.close();
    }
}
