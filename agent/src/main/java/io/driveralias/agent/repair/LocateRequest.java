package io.driveralias.agent.repair;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Where to look for driver files inside a root.
 *
 * @param libraryDirectories directories to scan for {@code lib*.so.<version>} files
 * @param driverVersion      the version to repair, or empty to detect it from the files
 * @param injectedFiles      container paths of driver files known to be injected (from the
 *                           container's mountinfo or Docker's mount list); scanned first
 * @param hostSources        for injected files that cannot be read inside the root (the
 *                           empty placeholders seen through an overlay's merged directory),
 *                           the host path to read the SONAME from, by container path
 * @param hostDriverFiles    the injected files whose mount came from a host library directory:
 *                           the only ones whose SONAMEs the agent learns for other containers
 */
public record LocateRequest(List<String> libraryDirectories, Optional<String> driverVersion,
                            List<String> injectedFiles, Map<String, String> hostSources,
                            Set<String> hostDriverFiles) {

    public LocateRequest {
        libraryDirectories = List.copyOf(libraryDirectories);
        injectedFiles = List.copyOf(injectedFiles);
        hostSources = Map.copyOf(hostSources);
        hostDriverFiles = Set.copyOf(hostDriverFiles);
    }

    public static LocateRequest of(List<String> libraryDirectories, Optional<String> driverVersion) {
        return new LocateRequest(libraryDirectories, driverVersion, List.of(), Map.of(), Set.of());
    }
}
