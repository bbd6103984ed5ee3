package io.driveralias.agent.live;

import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.FileNames;
import java.util.function.Predicate;

/**
 * How a container shows that it wants a GPU. A request its runtime serves (a GPU runtime with
 * {@code NVIDIA_VISIBLE_DEVICES}, a device request, NVIDIA's devices, a bind of one of the host's
 * own driver files) makes it the agent's to repair. Signs alone ({@code NVIDIA_VISIBLE_DEVICES}
 * without a GPU runtime, driver-named binds whose files are none of the host's) make no repair:
 * they only count, on a node where the agent finds none of the driver's files, as GPU containers
 * the node's missing driver strands (the driver bind-mounted from where the agent does not look).
 */
record GpuSigns(Kind kind, String detail) {

    enum Kind {
        /** A GPU request: the container is repaired. */
        REQUEST,
        /** Signs of one, no request: looked at read-only where the host shows no driver, else left alone. */
        SIGNS_ONLY,
        /** Nothing: never opened. */
        NONE
    }

    private static final String REQUEST_DETAIL = "";

    static GpuSigns of(ContainerInfo info, Predicate<String> hostDriverFile) {
        if (info.gpu().requested()) {
            return new GpuSigns(Kind.REQUEST, REQUEST_DETAIL);
        }
        boolean driverNamed = false;
        for (ContainerInfo.Mount m : info.mounts()) {
            if ("bind".equals(m.type()) && FileNames.hasDriverVersion(FileNames.baseName(m.destination()))) {
                if (hostDriverFile.test(m.source())) {
                    return new GpuSigns(Kind.REQUEST, REQUEST_DETAIL);
                }
                driverNamed = true;
            }
        }
        if (driverNamed) {
            return new GpuSigns(Kind.SIGNS_ONLY,
                    "no GPU request: its driver-named mounts are not the host's driver files (nothing written)");
        }
        if (info.gpu().visibleDevices().filter(v -> !v.isEmpty() && !v.equals("void")).isPresent()) {
            return new GpuSigns(Kind.SIGNS_ONLY, "no GPU request: NVIDIA_VISIBLE_DEVICES without a GPU runtime (nothing written)");
        }
        return new GpuSigns(Kind.NONE, "no GPU request (nothing written)");
    }
}
