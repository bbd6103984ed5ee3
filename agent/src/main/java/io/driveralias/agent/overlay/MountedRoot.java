package io.driveralias.agent.overlay;

import io.driveralias.agent.fs.Errno;
import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.fs.KernelFiles;
import io.driveralias.agent.fs.Libc;
import io.driveralias.agent.fs.OpenFlags;
import io.driveralias.agent.fs.PathResolver;
import io.driveralias.agent.fs.RootFs;
import io.driveralias.agent.mount.MountEntry;
import io.driveralias.agent.mount.MountInfoException;
import io.driveralias.agent.mount.MountInfoParser;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.locks.LockSupport;

/**
 * A created container's root as Docker mounts it at the start, before the container's process
 * runs: its overlay at {@code MergedDir}. Taken only once the directory is a mount point, and
 * only if that very mount (the one the opened fd lives on, not whatever the path names a
 * moment later) is an overlay whose upper layer is the container's own {@code UpperDir}. The
 * fd then pins the mount: whatever happens to the path, writes land in that container's layer.
 */
final class MountedRoot {

    private static final int MAX_MOUNTINFO = 4 << 20;
    /** A millisecond: the window lasts some 150 ms, and each look costs system calls. */
    private static final long POLL_NANOS = 1_000_000;

    private MountedRoot() {
    }

    /** Whether Docker has begun to start the container: the merged directory exists. */
    static boolean starting(String mergedDir) {
        try {
            Libc.close(Libc.openHost(mergedDir, OpenFlags.O_PATH | OpenFlags.O_NOFOLLOW));
            return true;
        } catch (ErrnoException e) {
            return false;
        }
    }

    /** Waits up to {@code patience} for the merged directory to appear; true if it did. */
    static boolean awaitStarting(String mergedDir, Duration patience) {
        long deadline = System.nanoTime() + patience.toNanos();
        while (!starting(mergedDir)) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            LockSupport.parkNanos(POLL_NANOS);
        }
        return true;
    }

    /**
     * The mounted root, verified, within {@code patience}; empty if it is not mounted by then
     * or the mount is not the container's overlay. Throws for errors other than absence.
     */
    static Optional<RootFs> await(String mergedDir, String upperDir, Duration patience, PathResolver resolver)
            throws ErrnoException {
        int slash = mergedDir.lastIndexOf('/');
        if (slash <= 0) {
            return Optional.empty();
        }
        long parentMount = mountOf(mergedDir.substring(0, slash));
        long deadline = System.nanoTime() + patience.toNanos();
        while (true) {
            int fd = openOrMinusOne(mergedDir);
            if (fd >= 0) {
                long mount = Libc.statx(fd, "", false).mountId();
                if (mount != 0 && mount != parentMount) {
                    if (isOverlayOf(mount, mergedDir, upperDir)) {
                        return Optional.of(RootFs.adopt(fd, resolver));
                    }
                    Libc.close(fd);
                    return Optional.empty();
                }
                Libc.close(fd);
                if (mount == 0) {
                    // A kernel without statx's mount id (before 5.8): left to the start path.
                    return Optional.empty();
                }
            }
            if (System.nanoTime() > deadline) {
                return Optional.empty();
            }
            LockSupport.parkNanos(POLL_NANOS);
        }
    }

    private static long mountOf(String hostPath) throws ErrnoException {
        int fd = Libc.openHost(hostPath, OpenFlags.O_PATH | OpenFlags.O_DIRECTORY | OpenFlags.O_NOFOLLOW);
        try {
            return Libc.statx(fd, "", false).mountId();
        } finally {
            Libc.close(fd);
        }
    }

    private static int openOrMinusOne(String hostPath) throws ErrnoException {
        try {
            return Libc.openHost(hostPath, OpenFlags.O_PATH | OpenFlags.O_DIRECTORY | OpenFlags.O_NOFOLLOW);
        } catch (ErrnoException e) {
            if (e.is(Errno.ENOENT)) {
                return -1;
            }
            throw e;
        }
    }

    /** The agent's own mount table says mount {@code id} is an overlay at the path, over that upper layer. */
    static boolean isOverlayOf(long id, String mergedDir, String upperDir) throws ErrnoException {
        int self = Libc.openHost("/proc/self", OpenFlags.O_PATH | OpenFlags.O_DIRECTORY);
        try {
            String text = new String(KernelFiles.read(self, "mountinfo", MAX_MOUNTINFO), StandardCharsets.ISO_8859_1);
            for (MountEntry m : MountInfoParser.parse(text)) {
                if (m.mountId() == id) {
                    return matches(m, mergedDir, upperDir);
                }
            }
            return false;
        } catch (MountInfoException e) {
            return false;
        } finally {
            Libc.close(self);
        }
    }

    /**
     * Docker gives overlayfs its layers as absolute paths, or (when they would not fit in a
     * page) relative to its overlay2 directory, where the container's upper layer then ends so.
     */
    static boolean matches(MountEntry m, String mergedDir, String upperDir) {
        if (!m.fsType().equals("overlay") || !m.mountPoint().equals(mergedDir)) {
            return false;
        }
        return Arrays.stream(m.superOptions().split(",")).filter(o -> o.startsWith("upperdir="))
                .map(o -> o.substring("upperdir=".length()))
                .anyMatch(u -> u.equals(upperDir) || (!u.startsWith("/") && !u.contains("..") && !u.isEmpty()
                        && upperDir.endsWith("/" + u)));
    }
}
