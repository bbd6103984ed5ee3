package io.driveralias.agent.repair;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Where to look for driver files inside a root.
 *
 * @param libraryDirectories directories to scan for {@code lib*.so.<version>} files
 * @param driverVersion      the version to repair, or empty to detect it from the files
 * @param injectedFiles      container paths of driver files known to be injected (from the
 *                           container's mountinfo or its runtime's mount list); scanned first
 * @param hostSources        for injected files that cannot be read inside the root (the
 *                           empty placeholders seen through an overlay's merged directory),
 *                           the host path they are mounted from, by container path
 * @param hostFilesOnly      a container's root: only the host's own driver files count (same
 *                           device and inode as one the agent found on the host), with the
 *                           SONAME read from the host's copy; false for a root the operator named
 *                           ({@code repair --root}), whose own files count
 */
public record LocateRequest(List<String> libraryDirectories, Optional<String> driverVersion,
                            List<String> injectedFiles, Map<String, String> hostSources, boolean hostFilesOnly) {

    public LocateRequest {
        libraryDirectories = List.copyOf(libraryDirectories);
        injectedFiles = List.copyOf(injectedFiles);
        hostSources = Map.copyOf(hostSources);
    }

    /** A root the operator named: its own files of the driver's version count. */
    public static LocateRequest of(List<String> libraryDirectories, Optional<String> driverVersion) {
        return new LocateRequest(libraryDirectories, driverVersion, List.of(), Map.of(), false);
    }

    /** A container's root: only the host's own driver files count. */
    public static LocateRequest container(List<String> libraryDirectories, List<String> injectedFiles,
                                          Map<String, String> hostSources) {
        return new LocateRequest(libraryDirectories, Optional.empty(), injectedFiles, hostSources, true);
    }
}
