package io.driveralias.agent.live;

import io.driveralias.agent.core.FileNames;
import io.driveralias.agent.core.GpuRequest;
import io.driveralias.agent.core.LruMap;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Which driver files a GPU runtime added to the last container that asked for each set of
 * driver capabilities ({@code NVIDIA_DRIVER_CAPABILITIES}: {@code compute,utility} gets
 * libcuda and NVML, {@code graphics} the GL libraries, and so on). A container created with
 * the same capabilities gets aliases for exactly those files before it starts: none for a
 * library the runtime will not add. Bounded: a node sees a handful of capability sets.
 */
public final class RuntimeFileSets {

    /** Real capability lists are a few words; a container's environment is not ours to keep in memory. */
    static final int MAX_CAPABILITIES_LENGTH = 256;

    private final Map<String, Set<String>> byCapabilities = Collections.synchronizedMap(new LruMap<>(64));

    /** The runtime added these files (paths in the container) to a container that asked {@code gpu}. */
    void record(GpuRequest gpu, Collection<String> containerPaths) {
        if (containerPaths.isEmpty() || gpu.capabilities().length() > MAX_CAPABILITIES_LENGTH) {
            return;
        }
        Set<String> names = new TreeSet<>();
        containerPaths.forEach(p -> names.add(FileNames.baseName(p)));
        byCapabilities.put(gpu.capabilities(), Set.copyOf(names));
    }

    /**
     * Of the files learned (file name to SONAME), those the runtime added last time to a
     * container with the same capabilities; empty if none was seen yet.
     */
    public Map<String, String> expected(GpuRequest gpu, Map<String, String> learned) {
        Set<String> names = byCapabilities.getOrDefault(gpu.capabilities(), Set.of());
        Map<String, String> expected = new LinkedHashMap<>();
        for (String name : names) {
            String soname = learned.get(name);
            if (soname != null) {
                expected.put(name, soname);
            }
        }
        return expected;
    }
}
