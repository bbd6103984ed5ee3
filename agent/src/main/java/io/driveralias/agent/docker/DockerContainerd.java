package io.driveralias.agent.docker;

import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.live.ContainerRuntime;
import io.driveralias.agent.live.ContainerRuntimeException;
import java.util.Optional;

/**
 * What the Docker adapter asks of Docker's own containerd, in Docker's namespace there
 * ({@code moby}), and only of Docker's containers (a containerd container has its Docker
 * container's id): where a created container's layers are when Docker keeps them in containerd's
 * image store (the snapshot of key {@code <id>}; Docker's own answers say nothing of them), and
 * when a container's process exists ({@code /tasks/create}, with its pid, before runc starts it).
 * Read only: nothing is created, changed or removed there. Owned here, by the code that asks; the
 * adapter is {@code containerd.DockerNamespace}, on containerd's own API.
 */
public interface DockerContainerd extends AutoCloseable {

    /** The socket, {@code unix:///run/containerd/containerd.sock}, for messages. */
    String address();

    /** containerd's version ("containerd 2.1.9"): whether it answers, asked at every (re)connect. */
    String version() throws ContainerRuntimeException;

    /**
     * The overlay layers of a container's root in {@code snapshotter} ({@code overlayfs}): its
     * writable {@code upperDir} and the image's {@code lowerDir} (top first); no merged directory
     * (Docker mounts the root, not containerd). Empty where the snapshot does not exist (any more)
     * or is not an overlay.
     */
    Optional<ContainerInfo.OverlayLayers> layers(String snapshotter, String containerId) throws ContainerRuntimeException;

    /**
     * Subscribes to the creation of Docker's containers' processes: events
     * {@link ContainerRuntime.Action#PROCESS_CREATED} with the container's id and its pid, nothing
     * else. Returns once containerd delivers to the subscription.
     */
    ContainerRuntime.EventStream processCreations() throws ContainerRuntimeException;

    @Override
    void close();

    /** Opens the adapter on a socket ({@code unix:///path}) for a namespace; nothing is called yet. */
    @FunctionalInterface
    interface Connector {
        DockerContainerd open(String address, String namespace);
    }
}
