package io.driveralias.agent.containerd;

import io.driveralias.agent.containerd.api.Mount;
import io.driveralias.agent.containerd.api.Process;
import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.GpuRequest;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A containerd container (its record, its OCI spec, its task) in the agent's words. Pure: the
 * adapter fetches, this decides. The CRI's labels are the kubelet's
 * ({@code io.kubernetes.pod.*}), so pod attribution is the same as on Docker.
 */
final class ContainerInfoMapper {

    static final String CRI_CONTAINER_NAME = "io.kubernetes.cri.container-name";
    static final String CRI_SANDBOX_NAME = "io.kubernetes.cri.sandbox-name";
    /** The CRI's annotation naming a container's sandbox. */
    static final String CRI_SANDBOX_ID = "io.kubernetes.cri.sandbox-id";
    static final String CDI_ANNOTATION_PREFIX = "cdi.k8s.io/";
    /** The options of io.containerd.runc.v1/v2, and of the older io.containerd.runtime.v1.linux. */
    static final String RUNC_OPTIONS = "containerd.runc.v1.Options";
    static final String LINUX_RUNC_OPTIONS = "containerd.linux.runc.RuncOptions";
    /** NVIDIA's runtimes: nvidia-container-runtime, .cdi, .legacy, nvidia-container-runtime-experimental. */
    static final String NVIDIA_RUNTIME_PREFIX = "nvidia-container-runtime";

    /**
     * @param namespace   containerd's namespace of the container
     * @param stateDir    containerd's state directory, where a task's bundle and root are
     * @param gpuRuntimes CRI runtime handlers that add the driver's files (--gpu-runtime)
     */
    record Settings(String namespace, String stateDir, Set<String> gpuRuntimes) {
    }

    private ContainerInfoMapper() {
    }

    /**
     * @param task      the container's init process, if it has a task
     * @param startedAt when that process started, if it exists
     * @param snapshot  the mounts of its root's snapshot (overlayfs: one overlay mount)
     */
    static ContainerInfo map(ContainerRecord container, Optional<Process> task, Optional<Instant> startedAt,
                             List<Mount> snapshot, Optional<String> criHandler, Settings settings) {
        boolean running = task.map(ContainerInfoMapper::processExists).orElse(false);
        return described(container, criHandler, settings)
                .running(running)
                .pid(running ? task.get().getPid() : 0)
                .startedAt(running ? startedAt : Optional.empty())
                .overlay(overlay(container, snapshot, settings))
                .build();
    }

    /**
     * A container at its start whose create was not described: its description without its
     * layers, and where the task mounts its root. Its start writes through its process, never
     * into its layers, so one round trip fewer in the milliseconds between {@code /tasks/create}
     * and the first instruction (beside a storm of large creates on a loaded node, the snapshot's
     * and the pod's handler's together took 40 to 110 ms after the record's).
     */
    static ContainerInfo mapStarting(ContainerRecord container, Optional<String> criHandler, Settings settings) {
        return described(container, criHandler, settings)
                .running(false)
                .pid(0)
                .startedAt(Optional.empty())
                .overlay(mountedRoot(container, settings))
                .build();
    }

    /**
     * What the record says, before any task: everything but the process and the overlay's
     * layers. Only what the CRI alone writes decides whether a container is a pod's sandbox and
     * which pod it belongs to: its own record of the container (an extension, which {@code ctr}
     * cannot set), the kubelet's labels (which override an image's) and its annotations on the
     * spec. A container made another way ({@code ctr}) is never a sandbox and names no pod,
     * whatever labels and annotations its creator gave it.
     */
    static ContainerInfo.Builder described(ContainerRecord container, Optional<String> criHandler, Settings settings) {
        OciSpec spec = container.spec();
        boolean cri = container.cri() != ContainerRecord.CriKind.NONE;
        boolean sandbox = container.cri() == ContainerRecord.CriKind.SANDBOX;
        Map<String, String> labels = cri ? container.labels() : Map.of();
        String name = cri ? spec.annotations().getOrDefault(sandbox ? CRI_SANDBOX_NAME : CRI_CONTAINER_NAME, container.id())
                : container.id();
        return ContainerInfo.builder(container.id())
                .name(name)
                .image(container.image())
                .labels(labels)
                .sandbox(sandbox)
                .mounts(spec.binds())
                .storage(container.snapshotter())
                .readOnlyRootfs(spec.readOnlyRoot())
                .user(user(spec))
                .gpu(gpu(container, cri ? criHandler : Optional.empty(), settings.gpuRuntimes()));
    }

    /** The process exists from the task's creation (before its first instruction) until it is reaped. */
    static boolean processExists(Process task) {
        return task.getPid() > 0 && switch (task.getStatus()) {
            case CREATED, RUNNING, PAUSED, PAUSING -> true;
            case STOPPED, UNKNOWN, UNRECOGNIZED -> false;
        };
    }

    /**
     * overlayfs's layers from the snapshot's mount options, and where the task mounts the
     * root: {@code <state>/io.containerd.runtime.v2.task/<namespace>/<id>/rootfs}.
     */
    static Optional<ContainerInfo.OverlayLayers> overlay(ContainerRecord container, List<Mount> snapshot, Settings settings) {
        if (!container.snapshotter().equals("overlayfs") || snapshot.size() != 1 || !snapshot.getFirst().getType().equals("overlay")) {
            return Optional.empty();
        }
        String upper = "";
        String lower = "";
        for (String option : snapshot.getFirst().getOptionsList()) {
            if (option.startsWith("upperdir=")) {
                upper = option.substring("upperdir=".length());
            } else if (option.startsWith("lowerdir=")) {
                lower = option.substring("lowerdir=".length());
            }
        }
        String bundle = bundle(container, settings);
        return Optional.of(new ContainerInfo.OverlayLayers(upper, lower, bundle + "/rootfs", bundle));
    }

    /** An overlayfs container's root as its task mounts it, its layers not read (empty); none for a sandbox, as above. */
    static Optional<ContainerInfo.OverlayLayers> mountedRoot(ContainerRecord container, Settings settings) {
        if (!container.snapshotter().equals("overlayfs") || container.cri() == ContainerRecord.CriKind.SANDBOX) {
            return Optional.empty();
        }
        String bundle = bundle(container, settings);
        return Optional.of(new ContainerInfo.OverlayLayers("", "", bundle + "/rootfs", bundle));
    }

    private static String bundle(ContainerRecord container, Settings settings) {
        return settings.stateDir() + "/io.containerd.runtime.v2.task/" + settings.namespace() + "/" + container.id();
    }

    private static String user(OciSpec spec) {
        if (spec.uid().isEmpty()) {
            return "";
        }
        return spec.uid().getAsLong() + (spec.gid().isPresent() ? ":" + spec.gid().getAsLong() : "");
    }

    /**
     * The GPU request: the runtime is NVIDIA's when its binary is (the GPU Operator's and the
     * toolkit's {@code BinaryName}), or when its CRI handler is one of {@code --gpu-runtime}; a
     * CDI annotation naming an NVIDIA device is a device request; NVIDIA's device nodes count.
     * The handler is the CRI's ({@code criHandler}: containerd 2.x's annotation on a CRI
     * container's spec, else the pod's sandbox record), else the runtime's own name.
     */
    static GpuRequest gpu(ContainerRecord container, Optional<String> criHandler, Set<String> gpuRuntimes) {
        OciSpec spec = container.spec();
        Optional<String> binary = container.runtimeBinary();
        String handler = criHandler.orElse(lastElement(container.runtimeName()));
        boolean nvidiaBinary = binary.map(b -> fileName(b).startsWith(NVIDIA_RUNTIME_PREFIX)).orElse(false);
        boolean deviceRequest = false;
        for (Map.Entry<String, String> annotation : spec.annotations().entrySet()) {
            if (annotation.getKey().startsWith(CDI_ANNOTATION_PREFIX)) {
                for (String device : annotation.getValue().split(",")) {
                    deviceRequest |= GpuRequest.isNvidiaCdiDevice(device.trim());
                }
            }
        }
        return GpuRequest.of(binary.orElse(container.runtimeName()), nvidiaBinary || gpuRuntimes.contains(handler),
                spec.gpuEnvironment(), deviceRequest, spec.nvidiaDevices());
    }

    /** {@code io.containerd.runc.v2} -> {@code v2}; a plain name stays itself. */
    static String lastElement(String runtimeName) {
        return runtimeName.substring(runtimeName.lastIndexOf('.') + 1);
    }

    private static String fileName(String path) {
        return path.substring(path.lastIndexOf('/') + 1);
    }
}
