package io.driveralias.agent.containerd;

import io.driveralias.agent.core.ContainerInfo;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * What the agent reads of a container's OCI runtime spec ({@code config.json} to be): only
 * what it uses, each part bounded by {@link OciSpecParser}.
 *
 * @param gpuEnvironment the {@code NVIDIA_*} entries of {@code process.env}, in order
 * @param uid            {@code process.user.uid}, {@code gid} its group
 * @param binds          the bind mounts of {@code mounts}
 * @param annotations    the annotations the agent reads: the CRI's ({@code io.kubernetes.cri.*})
 *                       and CDI's ({@code cdi.k8s.io/*})
 * @param nvidiaDevices  {@code linux.devices} has one of NVIDIA's device nodes
 * @param readOnlyRoot   {@code root.readonly}
 */
record OciSpec(List<String> gpuEnvironment, OptionalLong uid, OptionalLong gid, List<ContainerInfo.Mount> binds,
               Map<String, String> annotations, boolean nvidiaDevices, boolean readOnlyRoot) {

    static final OciSpec EMPTY = new OciSpec(List.of(), OptionalLong.empty(), OptionalLong.empty(), List.of(), Map.of(),
            false, false);

    OciSpec {
        gpuEnvironment = List.copyOf(gpuEnvironment);
        binds = List.copyOf(binds);
        annotations = Map.copyOf(annotations);
    }
}
