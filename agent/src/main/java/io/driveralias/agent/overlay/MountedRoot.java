package io.driveralias.agent.overlay;

import io.driveralias.agent.fs.Errno;
import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.fs.Libc;
import io.driveralias.agent.fs.NativeIo;
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
    /** A mountinfo line: two paths and the overlay's options (Docker keeps those within a page). */
    private static final int MAX_MOUNT_LINE = 64 << 10;
    /** Where the kernel's notice cannot be had (no inotify instance left), a look every millisecond. */
    private static final long POLL_NANOS = 1_000_000;
    /** The kernel says when it changes; a look at least this often all the same, should a notice be missed. */
    private static final int MAX_WAIT_MILLIS = 50;
    private static final int WATCH = NativeIo.IN_CREATE | NativeIo.IN_MOVED_TO | NativeIo.IN_DELETE_SELF
            | NativeIo.IN_MOVE_SELF | NativeIo.IN_ONLYDIR | NativeIo.IN_DONT_FOLLOW;

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

    /**
     * Waits up to {@code patience} for the merged directory to appear; true if it did. Docker
     * makes it in its layer's directory when the start begins: inotify says when something is
     * made there, so the wait costs a few system calls however long it lasts.
     */
    static boolean awaitStarting(String mergedDir, Duration patience) {
        long deadline = System.nanoTime() + patience.toNanos();
        if (starting(mergedDir)) {
            return true;
        }
        int slash = mergedDir.lastIndexOf('/');
        if (slash <= 0) {
            return sleepUntilStarting(mergedDir, deadline);
        }
        int inotify = -1;
        try {
            inotify = NativeIo.inotifyInit();
            NativeIo.inotifyWatch(inotify, mergedDir.substring(0, slash), WATCH);
            // Watched from here on: a directory made before the watch is seen by this first look.
            while (!starting(mergedDir)) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                int events = NativeIo.poll(inotify, NativeIo.POLLIN, millis(left));
                if ((events & NativeIo.POLLNVAL) != 0) {
                    return sleepUntilStarting(mergedDir, deadline);
                }
                if (events != 0) {
                    NativeIo.drain(inotify);
                }
            }
            return true;
        } catch (ErrnoException e) {
            // No inotify instance to spare (the user's limit), or the layer's directory is gone.
            return sleepUntilStarting(mergedDir, deadline);
        } finally {
            Libc.close(inotify);
        }
    }

    private static boolean sleepUntilStarting(String mergedDir, long deadline) {
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
     * or the mount is not the container's overlay. Throws for errors other than absence. The
     * agent's own mount table, opened before the first look, wakes the wait when it changes
     * (poll(2) reports POLLPRI on {@code /proc/self/mountinfo}), and tells which mount is there.
     */
    static Optional<RootFs> await(String mergedDir, String upperDir, Duration patience, PathResolver resolver)
            throws ErrnoException {
        int slash = mergedDir.lastIndexOf('/');
        if (slash <= 0) {
            return Optional.empty();
        }
        long parentMount = mountOf(mergedDir.substring(0, slash));
        long deadline = System.nanoTime() + patience.toNanos();
        int mountTable = Libc.openHost("/proc/self/mountinfo", OpenFlags.O_RDONLY);
        try {
            while (true) {
                int fd = openOrMinusOne(mergedDir);
                if (fd >= 0) {
                    long mount = Libc.statx(fd, "", false).mountId();
                    if (mount != 0 && mount != parentMount) {
                        if (isOverlayOf(mountTable, mount, mergedDir, upperDir)) {
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
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return Optional.empty();
                }
                int events = NativeIo.poll(mountTable, NativeIo.POLLPRI, Math.min(MAX_WAIT_MILLIS, millis(left)));
                if ((events & NativeIo.POLLNVAL) != 0) {
                    LockSupport.parkNanos(POLL_NANOS);
                }
            }
        } finally {
            Libc.close(mountTable);
        }
    }

    /** Nanoseconds left as poll(2)'s milliseconds, rounded up so that a wait never ends early. */
    private static int millis(long nanos) {
        return (int) Math.min(Integer.MAX_VALUE, (nanos + 999_999) / 1_000_000);
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

    /**
     * The agent's own mount table (open at {@code mountTable}) says mount {@code id} is an
     * overlay at the path, over that upper layer. Only the line of that mount is parsed: the
     * table is scanned for the line that begins with its id.
     */
    static boolean isOverlayOf(int mountTable, long id, String mergedDir, String upperDir) throws ErrnoException {
        byte[] prefix = (id + " ").getBytes(StandardCharsets.ISO_8859_1);
        Optional<byte[]> line = NativeIo.findLine(mountTable, prefix, MAX_MOUNT_LINE, MAX_MOUNTINFO);
        if (line.isEmpty()) {
            return false;
        }
        try {
            MountEntry m = MountInfoParser.parseLine(new String(line.get(), StandardCharsets.ISO_8859_1));
            return m.mountId() == id && matches(m, mergedDir, upperDir);
        } catch (MountInfoException e) {
            return false;
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
