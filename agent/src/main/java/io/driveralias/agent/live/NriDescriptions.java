package io.driveralias.agent.live;

import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.GpuRequest;
import io.driveralias.agent.nri.NriContainer;
import io.driveralias.agent.nri.NriMount;
import io.driveralias.agent.nri.NriPod;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A container as the agent describes it from what the runtime's NRI tells alone, for a runtime
 * whose own API the agent does not read (CRI-O; or containerd whose socket it was not given). Pure.
 *
 * <p>Where each fact comes from, and why it can be trusted:
 * <ul>
 * <li>The pod (namespace, name, uid) from NRI's PodSandbox, which the runtime fills from the
 *     kubelet's own sandbox metadata; the container's name from its CRI metadata. A pod's author
 *     names only their own pod. Image labels are not read at all.
 * <li>The GPU request from the container's environment ({@code NVIDIA_VISIBLE_DEVICES}, counted
 *     only under a runtime handler named by {@code --gpu-runtime}: NRI does not tell which binary a
 *     handler runs), NVIDIA's device nodes in its spec, and NVIDIA's CDI devices, given by the
 *     runtime (NRI 0.12) or asked for in a {@code cdi.k8s.io/} annotation.
 * <li>The driver files the runtime binds (its declared bind mounts); those a hook adds are in the
 *     container's own mount table, which the repair reads through its process as on any runtime.
 * <li>No image's own configuration, no layers: the repair goes through the container's process
 *     ({@code /proc/<pid>/root}), which NRI's StartContainer gives.
 * </ul>
 */
final class NriDescriptions {

    private static final String CDI_ANNOTATION_PREFIX = "cdi.k8s.io/";

    private NriDescriptions() {
    }

    /** The container as created: no process yet (the start adds it). */
    static ContainerInfo describe(NriPod pod, NriContainer container, Set<String> gpuRuntimes) {
        Map<String, String> labels = new LinkedHashMap<>();
        if (!pod.name().isEmpty() && !pod.namespace().isEmpty()) {
            labels.put("io.kubernetes.pod.name", pod.name());
            labels.put("io.kubernetes.pod.namespace", pod.namespace());
            labels.put("io.kubernetes.pod.uid", pod.uid());
            labels.put("io.kubernetes.container.name", container.name());
        }
        List<ContainerInfo.Mount> mounts = container.bindMounts().stream().map(NriDescriptions::mount).toList();
        String handler = pod.runtimeHandler();
        GpuRequest gpu = GpuRequest.of(handler.isEmpty() ? "default" : handler, gpuRuntimes.contains(handler), container.nvidiaEnv(),
                container.nvidiaCdiDevice() || cdiAnnotation(container.annotations()), container.nvidiaDevice());
        return ContainerInfo.builder(container.id()).name(container.name()).image(container.image()).labels(labels).sandbox(false)
                .running(false).pid(0).startedAt(Optional.empty()).mounts(mounts).storage("").gpu(gpu).build();
    }

    private static ContainerInfo.Mount mount(NriMount m) {
        return new ContainerInfo.Mount("bind", m.source(), m.destination(), !m.readOnly());
    }

    /** One of NVIDIA's CDI devices asked for in a {@code cdi.k8s.io/} annotation (a device plugin's, or the pod's). */
    static boolean cdiAnnotation(Map<String, String> annotations) {
        for (var annotation : annotations.entrySet()) {
            if (annotation.getKey().startsWith(CDI_ANNOTATION_PREFIX)) {
                for (String device : annotation.getValue().split(",")) {
                    if (GpuRequest.isNvidiaCdiDevice(device.trim())) {
                        return true;
                    }
                }
            }
        }
        return false;
    }
}
