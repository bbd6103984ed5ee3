package io.driveralias.agent.fs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The mount an fd lives on, to tell a bind mount from its parent directory when openat2's
 * RESOLVE_NO_XDEV is not available. statx reports it since Linux 5.8; before that the
 * agent's own {@code /proc/self/fdinfo} does (since 3.15). Device numbers alone are not
 * enough: a bind mount of a host directory often has the same device as the host root.
 */
final class MountIds {

    private MountIds() {
    }

    static long of(int fd) throws ErrnoException {
        return of(fd, Libc.statx(fd, "", false));
    }

    static long of(int fd, FileStat stat) throws ErrnoException {
        if (stat.mountId() != 0) {
            return stat.mountId();
        }
        // The agent's own fdinfo, never a container path.
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/fdinfo/" + fd))) {
                if (line.startsWith("mnt_id:")) {
                    return Long.parseLong(line.substring(7).trim());
                }
            }
        } catch (IOException | NumberFormatException e) {
            throw new ErrnoException("fdinfo", String.valueOf(fd), Errno.EIO);
        }
        throw new ErrnoException("fdinfo", String.valueOf(fd), Errno.ENOSYS);
    }
}
