package io.driveralias.agent.containerd;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import io.driveralias.agent.containerd.api.Container;
import io.driveralias.agent.containerd.api.LinuxRuncOptions;
import io.driveralias.agent.containerd.api.Mount;
import io.driveralias.agent.containerd.api.Process;
import io.driveralias.agent.containerd.api.RuncOptions;
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

    /** The CRI's annotation and label on a pod's sandbox ("pause") container. */
    static final String CRI_CONTAINER_TYPE = "io.kubernetes.cri.container-type";
    static final String CRI_KIND_LABEL = "io.cri-containerd.kind";
    static final String CRI_CONTAINER_NAME = "io.kubernetes.cri.container-name";
    static final String CRI_SANDBOX_NAME = "io.kubernetes.cri.sandbox-name";
    /** Set by containerd 2.0's CRI; 1.6 and 1.7 record the handler only in the sandbox's own CRI record. */
    static final String CRI_RUNTIME_HANDLER = "io.kubernetes.cri.runtime-handler";
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
    static ContainerInfo map(Container container, OciSpec spec, Optional<Process> task, Optional<Instant> startedAt,
                             List<Mount> snapshot, Optional<String> criHandler, Settings settings) {
        Map<String, String> labels = container.getLabelsMap();
        Map<String, String> annotations = spec.annotations();
        boolean sandbox = "sandbox".equals(annotations.get(CRI_CONTAINER_TYPE)) || "sandbox".equals(labels.get(CRI_KIND_LABEL));
        boolean running = task.map(ContainerInfoMapper::processExists).orElse(false);
        String name = annotations.getOrDefault(sandbox ? CRI_SANDBOX_NAME : CRI_CONTAINER_NAME, container.getId());
        return ContainerInfo.builder(container.getId())
                .name(name)
                .image(container.getImage())
                .labels(labels)
                .sandbox(sandbox)
                .running(running)
                .pid(running ? task.get().getPid() : 0)
                .startedAt(running ? startedAt : Optional.empty())
                .mounts(spec.binds())
                .storage(container.getSnapshotter())
                .overlay(overlay(container, snapshot, settings))
                .readOnlyRootfs(spec.readOnlyRoot())
                .user(user(spec))
                .gpu(gpu(container.getRuntime(), spec, criHandler, settings.gpuRuntimes()))
                .build();
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
    static Optional<ContainerInfo.OverlayLayers> overlay(Container container, List<Mount> snapshot, Settings settings) {
        if (!container.getSnapshotter().equals("overlayfs") || snapshot.size() != 1 || !snapshot.getFirst().getType().equals("overlay")) {
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
        String merged = settings.stateDir() + "/io.containerd.runtime.v2.task/" + settings.namespace() + "/" + container.getId()
                + "/rootfs";
        return Optional.of(new ContainerInfo.OverlayLayers(upper, lower, merged));
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
     *
     * @param criHandler the pod's runtime handler from the CRI's sandbox record (containerd 1.6, 1.7)
     */
    static GpuRequest gpu(Container.Runtime runtime, OciSpec spec, Optional<String> criHandler, Set<String> gpuRuntimes) {
        Optional<String> binary = binaryName(runtime.getOptions());
        String handler = Optional.ofNullable(spec.annotations().get(CRI_RUNTIME_HANDLER)).or(() -> criHandler)
                .orElse(lastElement(runtime.getName()));
        boolean nvidiaBinary = binary.map(b -> fileName(b).startsWith(NVIDIA_RUNTIME_PREFIX)).orElse(false);
        boolean deviceRequest = false;
        for (Map.Entry<String, String> annotation : spec.annotations().entrySet()) {
            if (annotation.getKey().startsWith(CDI_ANNOTATION_PREFIX)) {
                for (String device : annotation.getValue().split(",")) {
                    deviceRequest |= GpuRequest.isNvidiaCdiDevice(device.trim());
                }
            }
        }
        return GpuRequest.of(binary.orElse(runtime.getName()), nvidiaBinary || gpuRuntimes.contains(handler),
                spec.gpuEnvironment(), deviceRequest, spec.nvidiaDevices());
    }

    /** The OCI runtime binary the options name (runc's {@code BinaryName}), if any. */
    static Optional<String> binaryName(Any options) {
        String type = options.getTypeUrl().substring(options.getTypeUrl().lastIndexOf('/') + 1);
        try {
            String binary = switch (type) {
                case RUNC_OPTIONS -> RuncOptions.parseFrom(options.getValue()).getBinaryName();
                case LINUX_RUNC_OPTIONS -> LinuxRuncOptions.parseFrom(options.getValue()).getRuntime();
                default -> "";
            };
            return binary.isEmpty() ? Optional.empty() : Optional.of(binary);
        } catch (InvalidProtocolBufferException e) {
            return Optional.empty();
        }
    }

    /** {@code io.containerd.runc.v2} -> {@code v2}; a plain name stays itself. */
    static String lastElement(String runtimeName) {
        return runtimeName.substring(runtimeName.lastIndexOf('.') + 1);
    }

    private static String fileName(String path) {
        return path.substring(path.lastIndexOf('/') + 1);
    }
}
