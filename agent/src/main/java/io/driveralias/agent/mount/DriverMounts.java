package io.driveralias.agent.mount;

import io.driveralias.agent.core.FileNames;
import java.util.List;
import java.util.Optional;

/** Questions the agent asks of a container's mount table. Pure functions. */
public final class DriverMounts {

    private DriverMounts() {
    }

    /**
     * The mounts whose mount point is a versioned driver library
     * ({@code .../libcuda.so.535.104.05}): the files the NVIDIA runtime bind-mounted one by one.
     * Order and duplicates are kept as the mount table has them.
     */
    public static List<MountEntry> driverFiles(List<MountEntry> mounts) {
        return mounts.stream().filter(DriverMounts::isDriverFileMount).toList();
    }

    /**
     * The mount that {@code directory} lies in: the one whose mount point is the longest prefix
     * of it on component boundaries, the later line winning a tie because a later mount on the
     * same point stacks on top of the earlier one. This is a textual answer: the caller
     * resolves symlinks first, and a directory that is not a clean absolute path (empty,
     * {@code .} or {@code ..} components, trailing slash) gets no answer, since its text does
     * not say where it leads.
     *
     * <p>It does not notice a mount hidden by a later mount on one of its parent directories;
     * telling that apart needs the parent IDs, which the NVIDIA runtime's layout never calls
     * for.
     */
    public static Optional<MountEntry> coveringMount(List<MountEntry> mounts, String directory) {
        if (!isCleanAbsolute(directory)) {
            return Optional.empty();
        }
        MountEntry best = null;
        for (MountEntry mount : mounts) {
            String point = mount.mountPoint();
            if (isCleanAbsolute(point) && contains(point, directory)
                    && (best == null || point.length() >= best.mountPoint().length())) {
                best = mount;
            }
        }
        return Optional.ofNullable(best);
    }

    private static boolean isDriverFileMount(MountEntry mount) {
        String point = mount.mountPoint();
        return isCleanAbsolute(point) && !point.equals("/")
                && FileNames.versionOf(FileNames.baseName(point)).isPresent();
    }

    /** Both paths are clean and absolute, so a prefix ending at a slash is a parent. */
    private static boolean contains(String mountPoint, String path) {
        if (mountPoint.equals("/")) {
            return true;
        }
        return path.startsWith(mountPoint)
                && (path.length() == mountPoint.length() || path.charAt(mountPoint.length()) == '/');
    }

    /**
     * The shape the kernel prints mount points in. Anything else did not come from the kernel
     * as the agent understands it, so nothing is decided from it.
     */
    static boolean isCleanAbsolute(String path) {
        if (path.equals("/")) {
            return true;
        }
        if (!path.startsWith("/") || path.endsWith("/")) {
            return false;
        }
        // Component by component, without splitting: every mount of every container passes here.
        int start = 1;
        while (start <= path.length()) {
            int end = path.indexOf('/', start);
            if (end < 0) {
                end = path.length();
            }
            int length = end - start;
            if (length == 0 || (length <= 2 && path.charAt(start) == '.' && (length == 1 || path.charAt(start + 1) == '.'))) {
                return false;
            }
            start = end + 1;
        }
        return true;
    }
}
