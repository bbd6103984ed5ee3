package io.driveralias.agent.live;

import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.DriverLibrary;
import io.driveralias.agent.core.GpuRequest;
import io.driveralias.agent.core.LruMap;
import io.driveralias.agent.repair.RepairReport;
import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;

/**
 * Which of the host's driver files a GPU runtime added to the last container that asked it for
 * the same set of driver capabilities ({@code NVIDIA_DRIVER_CAPABILITIES}: {@code compute,utility}
 * gets libcuda and NVML, {@code graphics} the GL libraries, and so on) through the same runtime.
 * A container created with the same request gets aliases for exactly those files before it
 * starts: none for a library the runtime will not add.
 *
 * <p>Learned only from what one container cannot fake: containers that asked the runtime for the
 * driver, and only the host's own driver files (the report's driver files are identified by
 * device and inode), never a file the container's configuration mounted itself. Bounded: a node
 * sees a handful of capability sets.
 */
public final class RuntimeFileSets {

    /** Real capability lists are a few words; a container's environment is not ours to keep in memory. */
    static final int MAX_CAPABILITIES_LENGTH = 256;

    private final Map<String, Map<String, String>> byRequest = Collections.synchronizedMap(new LruMap<>(64));

    /** After the start of {@code info} was repaired: the host's driver files its runtime added, if it asked for them. */
    void record(ContainerInfo info, RepairReport report) {
        GpuRequest gpu = info.gpu();
        if (!gpu.addsDriverFiles() || gpu.capabilities().length() > MAX_CAPABILITIES_LENGTH) {
            return;
        }
        Map<String, String> added = new TreeMap<>();
        for (DriverLibrary file : report.driverFiles()) {
            if (!declared(info, file.directory() + "/" + file.fileName())) {
                added.put(file.fileName(), file.soname());
            }
        }
        if (!added.isEmpty()) {
            byRequest.put(key(gpu), Map.copyOf(added));
        }
    }

    /** Of the host's driver files, those the runtime added last time to a container that asked as {@code gpu} does: name to SONAME. */
    public Map<String, String> expected(GpuRequest gpu) {
        return byRequest.getOrDefault(key(gpu), Map.of());
    }

    private static String key(GpuRequest gpu) {
        return gpu.runtime() + "\n" + gpu.deviceRequest() + "\n" + gpu.capabilities();
    }

    /** A path at or under a mount the container's configuration declares: the container's, not the runtime's. */
    private static boolean declared(ContainerInfo info, String path) {
        for (ContainerInfo.Mount m : info.mounts()) {
            String d = m.destination();
            if (path.equals(d) || (d.endsWith("/") ? path.startsWith(d) : path.startsWith(d + "/"))) {
                return true;
            }
        }
        return false;
    }
}
