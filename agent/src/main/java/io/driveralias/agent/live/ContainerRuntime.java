package io.driveralias.agent.live;

import io.driveralias.agent.core.ContainerInfo;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * All the agent asks of one container runtime, owned here by the code that asks: its container
 * events, its running containers, one container's description, and whether it answers. One
 * adapter per runtime ({@code docker.DockerEngine}, {@code containerd.ContainerdRuntime}); unit
 * tests use a fake. Everything after this port (queue, repair, reporting) is shared. Errors are
 * types: {@link ContainerRuntimeException.NoSuchContainer} for a container that does not exist
 * (any more), {@link ContainerRuntimeException.Unreachable} for a runtime that does not answer.
 */
public interface ContainerRuntime extends AutoCloseable {

    /** {@code docker} or {@code containerd}: the {@code runtime} label of metrics, in messages. */
    String name();

    /** A runtime's name as people write it, for messages: Docker, containerd. */
    static String displayName(String name) {
        return name.equals("docker") ? "Docker" : name;
    }

    /** Where the runtime is (its socket), for messages. */
    String endpoint();

    /**
     * (Re)connects: agrees on the API with the runtime and learns what the adapter needs of it.
     * Called at every (re)connect of the event stream. Returns what to log ("API 1.41").
     *
     * @throws ContainerRuntimeException.WrongApi when something answers that is not this runtime's API
     */
    String connect() throws ContainerRuntimeException;

    /** True if the runtime answered a ping within a short timeout: a frozen daemon does not. */
    boolean ping();

    /** @throws ContainerRuntimeException.NoSuchContainer if there is no such container */
    ContainerInfo describe(String id) throws ContainerRuntimeException;

    /**
     * A container a create event just named, described as a container without a process (its
     * task, if it already has one, is the start path's to find): one round trip fewer where the
     * runtime keeps the process apart (containerd), so that a start that follows its create
     * within milliseconds ({@code ctr run}) finds the create's work done.
     */
    default ContainerInfo describeCreated(String id) throws ContainerRuntimeException {
        return describe(id);
    }

    /**
     * The container whose process an event just named ({@link Event#pid()}), described as fast as
     * the adapter can: from the description kept since the container's creation (no round trip:
     * its process runs its first instruction moments after), else ahead of any other work. The
     * caller checks the process is the container's. Empty where the adapter has no such way:
     * {@link #describe}.
     */
    default Optional<ContainerInfo> describeStarting(String id, int pid) throws ContainerRuntimeException {
        return Optional.empty();
    }

    /**
     * Goes once through what {@link #describe} goes through, changing nothing, so that the first
     * container of the node does not pay for loading it. Called off the watches, once connected
     * or not; a failure only leaves the first description slower.
     */
    default void warmUp() {
    }

    /**
     * A created container, described without waiting for the container: Docker's inspect waits
     * while a start is in progress, which is the whole window before the container's first
     * instruction. Empty where that cannot be told (not in the created state, storage without
     * overlay layers, a file missing): {@link #describe} then serves.
     */
    Optional<ContainerInfo> peekCreated(String id) throws ContainerRuntimeException;

    /**
     * True if this runtime runs a container of the pod with this uid (the kubelet's
     * {@code io.kubernetes.pod.uid} label): how an agent in a pod finds out whether it watches
     * the runtime that runs the node's pods. {@code podUid} is a pod uid, checked by the caller.
     */
    boolean runsPod(String podUid) throws ContainerRuntimeException;

    /** Ids of running containers (processes that exist), oldest first where the runtime tells. */
    List<String> runningContainerIds() throws ContainerRuntimeException;

    /**
     * Subscribes to container events, from {@code since} (a position {@link Event#time()} gave,
     * for runtimes that replay) or from now on. Returns once the runtime accepted the subscription.
     */
    EventStream events(Optional<String> since) throws ContainerRuntimeException;

    /** What happened to a container, in the agent's words. */
    enum Action {
        /** Configured, with no process yet (Docker {@code create}, containerd {@code /containers/create}). */
        CREATED,
        /**
         * Its process exists and has not run its first instruction yet (containerd {@code /tasks/create}):
         * the last moment to repair it through its own root before it starts.
         */
        PROCESS_CREATED,
        /** Running (Docker {@code start}, containerd {@code /tasks/start}). */
        STARTED,
        /** Its process ended (Docker {@code die}, containerd {@code /tasks/exit}). */
        EXITED,
        /** Removed (Docker {@code destroy}, containerd {@code /containers/delete}). */
        REMOVED
    }

    /**
     * One container event.
     *
     * @param runtimeAction the runtime's own name for it (Docker's {@code start}, containerd's
     *                      {@code /tasks/create}): the {@code action} label of the event counters
     * @param time          a position to resume from ({@link #events}), empty if the runtime gave none
     * @param pid           the container's process on the host where the event names it
     *                      (containerd's {@code /tasks/create}), else 0
     */
    record Event(String containerId, Action action, String runtimeAction, String time, int pid) {
        public Event(String containerId, Action action, String runtimeAction, String time) {
            this(containerId, action, runtimeAction, time, 0);
        }
    }

    /** An open subscription; {@link #close()} may come from another thread and ends a waiting {@link #next()}. */
    interface EventStream extends AutoCloseable {

        /** The next event, waiting for it; empty once the stream has ended. */
        Optional<Event> next() throws ContainerRuntimeException;

        @Override
        void close();

        /**
         * This stream, telling {@code forget} the id of each container removed before handing its
         * event on: a removed container's id may be used again, so what an adapter keeps of it
         * (its description since its creation) goes with it.
         */
        /** This stream with only the events {@code keep} accepts: the others are read and dropped. */
        default EventStream filtered(Predicate<Event> keep) {
            EventStream events = this;
            return new EventStream() {
                @Override
                public Optional<Event> next() throws ContainerRuntimeException {
                    for (Optional<Event> e = events.next(); e.isPresent(); e = events.next()) {
                        if (keep.test(e.get())) {
                            return e;
                        }
                    }
                    return Optional.empty();
                }

                @Override
                public void close() {
                    events.close();
                }
            };
        }

        default EventStream forgettingRemoved(Consumer<String> forget) {
            EventStream events = this;
            return new EventStream() {
                @Override
                public Optional<Event> next() throws ContainerRuntimeException {
                    Optional<Event> event = events.next();
                    event.filter(e -> e.action() == Action.REMOVED).ifPresent(e -> forget.accept(e.containerId()));
                    return event;
                }

                @Override
                public void close() {
                    events.close();
                }
            };
        }
    }

    @Override
    void close();
}
