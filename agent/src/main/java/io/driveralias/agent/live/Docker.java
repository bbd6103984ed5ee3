package io.driveralias.agent.live;

import io.driveralias.agent.core.ContainerInfo;
import java.util.List;
import java.util.Optional;

/**
 * All the agent asks of Docker, owned here by the code that asks: the container event stream,
 * the running containers, one container's description, and whether the daemon answers. One
 * implementation talks to the daemon ({@code docker.DockerEngine}); unit tests use a fake.
 * Errors are types: {@link DockerException.NoSuchContainer} for a container that does not
 * exist (any more), {@link DockerException.Unreachable} for a daemon that does not answer.
 */
public interface Docker extends AutoCloseable {

    /** Where the daemon is, for messages. */
    String host();

    /** Agrees on the API version with the daemon (at every (re)connect) and returns it. */
    String negotiate() throws DockerException;

    /** The version agreed, negotiating first if none is yet. */
    String apiVersion() throws DockerException;

    /** True if the daemon answered a ping within a short timeout: a frozen daemon does not. */
    boolean ping();

    /** @throws DockerException.NoSuchContainer if there is no such container */
    ContainerInfo inspect(String idOrName) throws DockerException;

    /**
     * A created container as Docker's container list and layer store describe it, without
     * waiting for the container: inspect waits while a start is in progress, which is the whole
     * window before the container's first instruction. Empty where that cannot be told (the
     * container is not in the created state, the storage is not overlay2, a file is missing):
     * {@link #inspect} then serves.
     */
    Optional<ContainerInfo> peekCreated(String id) throws DockerException;

    /** Ids of running containers, oldest first. */
    List<String> runningContainerIds() throws DockerException;

    /**
     * Subscribes to container create, start, die and destroy events, from {@code since}
     * (Docker's "seconds.nanoseconds", as {@link Event#time()} gives it) or from now on.
     * Returns once the daemon has accepted the subscription.
     */
    EventStream events(Optional<String> since) throws DockerException;

    /** One container event: {@code time} in "seconds.nanoseconds", empty if Docker gave none. */
    record Event(String containerId, String action, String time) {
    }

    /** An open subscription; {@link #close()} may come from another thread and ends a waiting {@link #next()}. */
    interface EventStream extends AutoCloseable {

        /** The next event, waiting for it; empty once the stream has ended. */
        Optional<Event> next() throws DockerException;

        @Override
        void close();
    }

    @Override
    void close();
}
