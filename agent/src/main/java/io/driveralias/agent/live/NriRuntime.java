package io.driveralias.agent.live;

import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.LruMap;
import io.driveralias.agent.nri.NriContainer;
import io.driveralias.agent.nri.NriPod;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.IntFunction;

/**
 * A container runtime the agent knows only through its NRI plugin: CRI-O (which has NRI on by
 * default from 1.30 and no API the agent reads), or containerd where the agent is given its NRI
 * socket and not its API's. What NRI's calls tell is kept, a description per container
 * ({@link NriDescriptions}), and the repair, the reconcile and the agent's search for its own pod
 * read it as they read any runtime's. NRI's lock is the runtime's start: it has no event stream,
 * and its stream here only waits until NRI's connection goes (the watch then connects again, which
 * succeeds once the runtime has the plugin back, and reconciles).
 *
 * <p>Bounded: {@value #CAPACITY} containers, the least recently told forgotten (a forgotten
 * container still running is told again by the next Synchronize). Nothing here holds a lock while
 * it does I/O; the process checks read {@code /proc} on the caller's thread (a worker's or a call
 * thread's, never NRI's reading thread).
 */
public final class NriRuntime implements ContainerRuntime {

    /** The {@code runtime} label: the same as the NRI connection's, which this runtime is. */
    public static final String NAME = NriStarts.RUNTIME_LABEL;
    static final int CAPACITY = 4096;

    /** One container as NRI told it: its description, its pod's uid, its process once started (0 before). */
    private record Known(ContainerInfo info, String podUid, int pid) {
    }

    private final Path socket;
    private final Set<String> gpuRuntimes;
    private final IntFunction<Optional<Instant>> processStart;
    /** The runtime that has the plugin now ("cri-o 1.34.2 (NRI v0.10.0)"), empty while none has. */
    private volatile Optional<String> connectedTo = Optional.empty();
    private final Map<String, Known> containers = Collections.synchronizedMap(new LruMap<>(CAPACITY));
    private final Object connection = new Object();

    /**
     * @param gpuRuntimes  runtime handlers that add the driver's files ({@code --gpu-runtime})
     * @param processStart when a process started, empty if there is no such process
     */
    public NriRuntime(Path socket, Set<String> gpuRuntimes, IntFunction<Optional<Instant>> processStart) {
        this.socket = socket;
        this.gpuRuntimes = Set.copyOf(gpuRuntimes);
        this.processStart = processStart;
    }

    /** NRI told of a container (created, starting, or running at a Synchronize); its process where it has one. */
    void told(NriPod pod, NriContainer container) {
        if (container.id().isEmpty()) {
            return;
        }
        Known before = containers.get(container.id());
        int pid = container.pid() > 0 ? container.pid() : before == null ? 0 : before.pid();
        containers.put(container.id(), new Known(NriDescriptions.describe(pod, container, gpuRuntimes), pod.uid(), pid));
    }

    /** The runtime took the plugin ({@code runtime} names it), or lost it (empty): a watch waiting on the stream wakes. */
    void connection(Optional<String> runtime) {
        connectedTo = runtime;
        connectionChanged();
    }

    private void connectionChanged() {
        synchronized (connection) {
            connection.notifyAll();
        }
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String endpoint() {
        return socket.toString();
    }

    @Override
    public String connect() throws ContainerRuntimeException {
        return connectedTo.orElseThrow(() -> new ContainerRuntimeException.Unreachable(socket
                + ": the runtime has not taken the agent's NRI plugin (is NRI on? CRI-O: [crio.nri] enable_nri)", null));
    }

    @Override
    public boolean ping() {
        return connectedTo.isPresent();
    }

    @Override
    public ContainerInfo describe(String id) throws ContainerRuntimeException {
        Known known = containers.get(id);
        if (known == null) {
            throw new ContainerRuntimeException.NoSuchContainer(id);
        }
        Optional<Instant> started = known.pid() > 0 ? processStart.apply(known.pid()) : Optional.empty();
        return started.map(s -> known.info().toBuilder().running(true).pid(known.pid()).startedAt(Optional.of(s)).build())
                .orElse(known.info());
    }

    @Override
    public Optional<ContainerInfo> describeStarting(String id, int pid) {
        Known known = containers.get(id);
        if (known == null || pid <= 0) {
            return Optional.empty();
        }
        return processStart.apply(pid).map(s -> known.info().toBuilder().running(true).pid(pid).startedAt(Optional.of(s)).build());
    }

    @Override
    public Optional<ContainerInfo> peekCreated(String id) {
        return Optional.ofNullable(containers.get(id)).map(Known::info);
    }

    @Override
    public boolean runsPod(String podUid) {
        synchronized (containers) {
            return !podUid.isEmpty() && containers.values().stream().anyMatch(k -> k.podUid().equals(podUid));
        }
    }

    @Override
    public List<String> runningContainerIds() {
        List<Map.Entry<String, Known>> all;
        synchronized (containers) {
            all = new ArrayList<>(containers.entrySet());
        }
        List<String> running = new ArrayList<>();
        for (Map.Entry<String, Known> e : all) {
            if (e.getValue().pid() > 0 && processStart.apply(e.getValue().pid()).isPresent()) {
                running.add(e.getKey());
            }
        }
        return running;
    }

    /** No events: NRI's calls are the runtime's news. Waits until the connection changes, then ends. */
    @Override
    public EventStream events(Optional<String> since) {
        return new EventStream() {
            private volatile boolean closed;

            @Override
            public Optional<Event> next() throws ContainerRuntimeException {
                synchronized (connection) {
                    while (!closed && connectedTo.isPresent()) {
                        try {
                            connection.wait(1000);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                            throw new ContainerRuntimeException("interrupted");
                        }
                    }
                }
                return Optional.empty();
            }

            @Override
            public void close() {
                closed = true;
                connectionChanged();
            }
        };
    }

    @Override
    public void close() {
        connectionChanged();
    }
}
