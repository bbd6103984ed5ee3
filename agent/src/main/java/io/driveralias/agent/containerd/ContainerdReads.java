package io.driveralias.agent.containerd;

import io.driveralias.agent.containerd.api.GetContainerRequest;
import io.driveralias.agent.containerd.api.GetTaskRequest;
import io.driveralias.agent.containerd.api.Mount;
import io.driveralias.agent.containerd.api.MountsRequest;
import io.driveralias.agent.containerd.api.Process;
import io.driveralias.agent.containerd.api.TaskStatus;
import io.driveralias.agent.core.LruMap;
import io.driveralias.agent.live.ContainerRuntimeException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * The parts of a container's description read from containerd, each call bounded: its record
 * (streamed, and only so many at once, as each may hold megabytes until it is read), its pod's
 * runtime handler, its task and its snapshot's mounts.
 */
final class ContainerdReads {

    private final ContainerdClient client;
    private final Duration deadline;
    /** Each pod's runtime handler, by sandbox id (a pod's handler never changes). */
    private final Map<String, Optional<String>> handlers = new LruMap<>(1024);
    /** Records in flight: each holds up to {@link ContainerdClient#MAX_MESSAGE} of the client's buffer until it is read. */
    private final Semaphore records = new Semaphore(2, true);
    /** One more, for a starting container only: it never waits behind others' records. */
    private final Semaphore starts = new Semaphore(1, true);

    ContainerdReads(ContainerdClient client, Duration deadline) {
        this.client = client;
        this.deadline = deadline;
    }

    /**
     * The container's record, read as it streams: at most two at once, as each holds up to 8 MiB
     * of the client's buffer, and one more for a starting container ({@code starting}).
     */
    Optional<ContainerRecord> record(String id, boolean starting) throws ContainerRuntimeException {
        Semaphore permits = starting ? starts : records;
        try {
            if (!permits.tryAcquire(deadline.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new ContainerRuntimeException.Unreachable("containerd: no description within " + deadline, null);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ContainerRuntimeException.Unreachable("interrupted", e);
        }
        try {
            return Optional.of(client.callInNamespace(ContainerdRpc.GET_CONTAINER, GetContainerRequest.newBuilder().setId(id)
                    .build(), deadline));
        } catch (ContainerdClient.NotFound e) {
            return Optional.empty();
        } finally {
            permits.release();
        }
    }

    /**
     * The pod's runtime handler from its sandbox's CRI record (its own, for a sandbox), kept per
     * sandbox: one more lookup per pod, not per container. Only for containers the CRI made, and
     * only from the sandbox the CRI's own annotation names.
     */
    Optional<String> criHandler(ContainerRecord container, boolean starting) throws ContainerRuntimeException {
        if (container.cri() == ContainerRecord.CriKind.SANDBOX) {
            // Kept for its pod's containers, whose creates follow: no second read of this record for them.
            synchronized (handlers) {
                handlers.put(container.id(), container.sandboxHandler());
            }
            return container.sandboxHandler();
        }
        String sandboxId = container.spec().annotations().get(ContainerInfoMapper.CRI_SANDBOX_ID);
        if (container.cri() == ContainerRecord.CriKind.NONE || sandboxId == null || !EventDecoder.isContainerId(sandboxId)) {
            return Optional.empty();
        }
        synchronized (handlers) {
            Optional<String> known = handlers.get(sandboxId);
            if (known != null) {
                return known;
            }
        }
        Optional<String> handler = record(sandboxId, starting).filter(r -> r.cri() == ContainerRecord.CriKind.SANDBOX)
                .flatMap(ContainerRecord::sandboxHandler);
        synchronized (handlers) {
            handlers.put(sandboxId, handler);
        }
        return handler;
    }

    /**
     * The container's task, if it has one. containerd asks the task's shim, which answers only
     * once a start in progress is done, and after 2 s reports the state as unknown (a runtime
     * hanging in {@code runc start}): that is an error here, not "no process".
     */
    Optional<Process> task(String id) throws ContainerRuntimeException {
        Process task;
        try {
            task = client.callInNamespace(ContainerdRpc.GET_TASK, GetTaskRequest.newBuilder().setContainerId(id).build(),
                    deadline).getProcess();
        } catch (ContainerdClient.NotFound e) {
            return Optional.empty();
        }
        if (task.getStatus() == TaskStatus.UNKNOWN) {
            throw new ContainerRuntimeException("the task of " + id + " is in an unknown state (its shim did not answer)");
        }
        return Optional.of(task);
    }

    /**
     * The container's layers; none for a pod's sandbox, which the agent never writes (in a burst
     * of pods, one round trip less per pod while GPU containers' creates wait).
     */
    List<Mount> snapshot(ContainerRecord container) throws ContainerRuntimeException {
        if (container.cri() == ContainerRecord.CriKind.SANDBOX) {
            return List.of();
        }
        return snapshot(container.snapshotter(), container.snapshotKey());
    }

    List<Mount> snapshot(String snapshotter, String key) throws ContainerRuntimeException {
        if (snapshotter.isEmpty() || key.isEmpty()) {
            return List.of();
        }
        try {
            return client.callInNamespace(ContainerdRpc.SNAPSHOT_MOUNTS, MountsRequest.newBuilder()
                    .setSnapshotter(snapshotter).setKey(key).build(), deadline).getMountsList();
        } catch (ContainerdClient.NotFound e) {
            return List.of();
        }
    }
}
