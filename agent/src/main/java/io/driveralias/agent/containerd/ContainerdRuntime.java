package io.driveralias.agent.containerd;

import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import com.google.protobuf.Empty;
import io.driveralias.agent.containerd.api.Container;
import io.driveralias.agent.containerd.api.GetContainerResponse;
import io.driveralias.agent.containerd.api.ListContainersRequest;
import io.driveralias.agent.containerd.api.ListTasksRequest;
import io.driveralias.agent.containerd.api.Process;
import io.driveralias.agent.containerd.api.VersionResponse;
import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.LruMap;
import io.driveralias.agent.core.Printable;
import io.driveralias.agent.fs.ProcessStartTime;
import io.driveralias.agent.live.ContainerRuntime;
import io.driveralias.agent.live.ContainerRuntimeException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * containerd's own API (gRPC on its socket, {@link ContainerdClient}): events, containers, tasks and snapshots of one
 * namespace ({@code k8s.io}, the CRI's, by default). A container's facts come from its record
 * (labels, runtime, OCI spec, snapshot), its snapshot's mounts (the overlay's layers) and its
 * task (the process, from its creation on); when that process started, from the kernel.
 */
public final class ContainerdRuntime implements ContainerRuntime {

    /** The CRI's label of a pod's uid on each of its containers. */
    private static final String POD_UID_LABEL = "io.kubernetes.pod.uid";

    private static final Logger LOG = LoggerFactory.getLogger(ContainerdRuntime.class);
    static final Duration CALL_DEADLINE = Duration.ofSeconds(5);
    static final Duration PING_DEADLINE = Duration.ofSeconds(2);
    /** A description slower than this is worth a debug line: containerd or the node is busy. */
    private static final long SLOW_DESCRIPTION = 50_000_000;
    /** Docker's own namespace in containerd: its containers are Docker's to describe (the docker runtime). */
    public static final String DOCKER_NAMESPACE = "moby";

    /**
     * @param address     {@code unix:///run/containerd/containerd.sock}
     * @param namespace   the containerd namespace watched ({@code k8s.io}: the CRI's)
     * @param stateDir    containerd's state directory ({@code /run/containerd}), where tasks' roots are mounted
     * @param hostProc    the host's procfs, for the processes' start times
     * @param gpuRuntimes CRI runtime handlers that add the driver's files (--gpu-runtime)
     */
    public record Settings(String address, String namespace, String stateDir, String hostProc, Set<String> gpuRuntimes) {
        public Settings {
            if (namespace.equals(DOCKER_NAMESPACE)) {
                throw new IllegalArgumentException("containerd namespace moby is Docker's own: watch Docker instead");
            }
            gpuRuntimes = Set.copyOf(gpuRuntimes);
        }
    }

    private final Settings settings;
    private final ContainerdClient client;
    private final ProcessStartTime startTimes;
    private final ContainerInfoMapper.Settings mapping;
    /**
     * Each container's description without its process, from its last description: what its
     * start reuses ({@link #describeStarting}). A few KiB each, bounded; dropped when the
     * container is removed.
     */
    private final Map<String, ContainerInfo> described = Collections.synchronizedMap(new LruMap<>(1024));
    /** The record, task and snapshot reads, each bounded. */
    private final ContainerdReads reads;

    public ContainerdRuntime(Settings settings, ProcessStartTime startTimes) {
        this.settings = settings;
        this.client = new ContainerdClient(socketPath(settings.address()), settings.namespace());
        this.startTimes = startTimes;
        this.mapping = new ContainerInfoMapper.Settings(settings.namespace(), settings.stateDir(), settings.gpuRuntimes());
        this.reads = new ContainerdReads(client, CALL_DEADLINE);
    }

    /** The socket's path in {@code unix:///path}. */
    static String socketPath(String address) {
        if (!address.startsWith("unix:///")) {
            throw new IllegalArgumentException("containerd's address is unix:///path/to/containerd.sock, got " + address);
        }
        return address.substring("unix://".length());
    }

    @Override
    public String name() {
        return "containerd";
    }

    @Override
    public String endpoint() {
        return settings.address();
    }

    @Override
    public String connect() throws ContainerRuntimeException {
        if (!Files.exists(Path.of(client.socket()))) {
            throw new ContainerRuntimeException.Unreachable(client.socket() + ": no such socket (is containerd running here?"
                    + " --containerd-address names its socket)", null);
        }
        // An HTTP/1.1 server (Docker's socket) is told by its answer: the port's WrongApi.
        VersionResponse version = client.call(ContainerdRpc.VERSION, Empty.getDefaultInstance(), CALL_DEADLINE);
        return "containerd " + Printable.of(version.getVersion());
    }

    @Override
    public boolean ping() {
        try {
            client.call(ContainerdRpc.VERSION, Empty.getDefaultInstance(), PING_DEADLINE);
            return true;
        } catch (ContainerRuntimeException e) {
            return false;
        }
    }

    @Override
    public ContainerInfo describe(String id) throws ContainerRuntimeException {
        if (!EventDecoder.isContainerId(id)) {
            throw new ContainerRuntimeException("not a containerd container id: " + Printable.of(id));
        }
        long begun = System.nanoTime();
        ContainerRecord container = reads.record(id, false).orElseThrow(() -> new ContainerRuntimeException.NoSuchContainer(id));
        long recorded = System.nanoTime();
        Optional<Process> task = reads.task(id);
        Optional<Instant> started = task.filter(ContainerInfoMapper::processExists).flatMap(t -> startTimes.of(t.getPid()));
        ContainerInfo info = ContainerInfoMapper.map(container, task, started, reads.snapshot(container),
                reads.criHandler(container, false), mapping);
        logIfSlow(id, "described", begun, recorded);
        described.put(id, info.toBuilder().running(false).pid(0).startedAt(Optional.empty()).build());
        return info;
    }

    @Override
    public ContainerInfo describeCreated(String id) throws ContainerRuntimeException {
        if (!EventDecoder.isContainerId(id)) {
            throw new ContainerRuntimeException("not a containerd container id: " + Printable.of(id));
        }
        ContainerRecord container = reads.record(id, false).orElseThrow(() -> new ContainerRuntimeException.NoSuchContainer(id));
        ContainerInfo info = ContainerInfoMapper.map(container, Optional.empty(), Optional.empty(), reads.snapshot(container),
                reads.criHandler(container, false), mapping);
        described.put(id, info);
        return info;
    }

    /**
     * From the description made at its creation, with the process a {@code /tasks/create} event
     * named: the record, the spec and the snapshot do not change once a container exists, and
     * the process is checked by the caller (its cgroup must name the container). No call to
     * containerd: under the CRI the process runs its first instruction some 6 ms after that event.
     */
    @Override
    public Optional<ContainerInfo> describeStarting(String id, int pid) throws ContainerRuntimeException {
        if (pid <= 0 || !EventDecoder.isContainerId(id)) {
            return Optional.empty();
        }
        ContainerInfo known = described.get(id);
        if (known == null) {
            // Its create was not described yet (a storm of others ahead of it): its record now, ahead
            // of them, without its layers, and its process as the event named it; the caller checks
            // the process is its.
            long begun = System.nanoTime();
            ContainerRecord container = reads.record(id, true).orElseThrow(() -> new ContainerRuntimeException.NoSuchContainer(id));
            long recorded = System.nanoTime();
            known = ContainerInfoMapper.mapStarting(container, reads.criHandler(container, true), mapping);
            described.put(id, known);
            // Under a storm of large creates a GPU container's start was seen to take 360 ms here or in its write.
            logIfSlow(id, "described at its start", begun, recorded);
        }
        ContainerInfo base = known;
        return startTimes.of(pid).map(started -> base.toBuilder().running(true).pid(pid).startedAt(Optional.of(started))
                .build());
    }

    /** At debug level, a description over {@link #SLOW_DESCRIPTION}, and how much of it was the record. */
    private static void logIfSlow(String id, String what, long begun, long recorded) {
        long took = System.nanoTime() - begun;
        if (took > SLOW_DESCRIPTION && LOG.isDebugEnabled()) {
            LOG.debug("container {}: {} in {} ms (its record {} ms)", id, what, took / 1_000_000, (recorded - begun) / 1_000_000);
        }
    }

    /**
     * The first description of a container cost about 230 ms a call cold with grpc-java (gRPC's
     * paths for the method, protobuf's schemas of its messages, the spec's parser): with {@code ctr run}, whose
     * start follows its create within milliseconds, the first container after the agent started
     * was repaired after its first instruction. Here each of the three calls asks for a container
     * that does not exist, and a description made up in memory goes through reading and mapping.
     */
    @Override
    public void warmUp() {
        String absent = "driver-alias-warm-up";
        Container sample = Container.newBuilder().setId(absent).setSnapshotter("overlayfs").setSnapshotKey(absent)
                .putLabels(POD_UID_LABEL, "00000000-0000-0000-0000-000000000000")
                .setSpec(Any.newBuilder().setTypeUrl("types.containerd.io/opencontainers/runtime-spec/1/Spec")
                        .setValue(ByteString.copyFromUtf8("{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=void\"]},"
                                + "\"mounts\":[{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\"}],"
                                + "\"annotations\":{}}")))
                .build();
        try {
            ContainerRecord parsed = ContainerRecordReader.readResponse(GetContainerResponse.newBuilder().setContainer(sample)
                    .build().toByteString().newInput());
            ContainerInfoMapper.map(parsed, Optional.empty(), Optional.empty(), List.of(), Optional.empty(), mapping);
            describe(absent);
        } catch (ContainerRuntimeException.NoSuchContainer expected) {
            // What a container that does not exist gets: the call's path is warm.
        } catch (ContainerRuntimeException | IOException | RuntimeException e) {
            LOG.debug("containerd warm-up: {}", Printable.of(String.valueOf(e.getMessage())));
        }
        try {
            reads.task(absent);
            reads.snapshot(sample.getSnapshotter(), sample.getSnapshotKey());
        } catch (ContainerRuntimeException | RuntimeException e) {
            LOG.debug("containerd warm-up: {}", Printable.of(String.valueOf(e.getMessage())));
        }
    }

    /**
     * Nothing to peek at: containerd never makes {@link #describe} wait on a start, and its
     * creation and its task's are seconds apart under the CRI (milliseconds with {@code ctr run},
     * where the start path at {@code /tasks/create} still comes before the first instruction). The
     * create job describes the container and writes into its writable layer at once, without
     * waiting for a mount that comes later.
     */
    @Override
    public Optional<ContainerInfo> peekCreated(String id) {
        return Optional.empty();
    }

    @Override
    public boolean runsPod(String podUid) throws ContainerRuntimeException {
        ListContainersRequest request = ListContainersRequest.newBuilder()
                .addFilters("labels.\"" + POD_UID_LABEL + "\"==" + podUid).build();
        return client.callInNamespace(ContainerdRpc.COUNT_CONTAINERS, request, CALL_DEADLINE) > 0;
    }

    @Override
    public List<String> runningContainerIds() throws ContainerRuntimeException {
        List<String> ids = new ArrayList<>();
        for (Process task : client.callInNamespace(ContainerdRpc.LIST_TASKS, ListTasksRequest.getDefaultInstance(),
                CALL_DEADLINE).getTasksList()) {
            // containerd names a task by its container's id, in the process's id field.
            String id = task.getContainerId().isEmpty() ? task.getId() : task.getContainerId();
            if (ContainerInfoMapper.processExists(task) && EventDecoder.isContainerId(id)) {
                ids.add(id);
            }
        }
        return ids;
    }

    @Override
    public EventStream events(Optional<String> since) throws ContainerRuntimeException {
        // containerd replays nothing: since is ignored, and a reconcile follows every (re)connect.
        EventStream events = EventSubscription.open(client, settings.namespace());
        return events.forgettingRemoved(described::remove);
    }

    @Override
    public void close() {
        client.close();
    }
}
