package io.driveralias.agent.fs;

import java.util.Arrays;

/**
 * Reads small files the kernel generates ({@code /proc/<pid>/cgroup}, {@code mountinfo}),
 * relative to an fd on {@code /proc/<pid>}: they report size 0, so they are read to EOF, with
 * a bound, because a container controls how many mounts it has.
 */
public final class KernelFiles {

    private KernelFiles() {
    }

    public static byte[] read(int dirFd, String name, int maxBytes) throws ErrnoException {
        int fd = Libc.openat(dirFd, name, OpenFlags.O_RDONLY | OpenFlags.O_NOFOLLOW | OpenFlags.O_NONBLOCK);
        try {
            return readOpen(fd, name, maxBytes);
        } finally {
            Libc.close(fd);
        }
    }

    /**
     * A regular file (one of Docker's, which a container's owner fills): read into one array of
     * the size it has, as a kernel file if it has none or changed while read.
     */
    public static byte[] readSized(int dirFd, String name, int maxBytes) throws ErrnoException {
        int fd = Libc.openat(dirFd, name, OpenFlags.O_RDONLY | OpenFlags.O_NOFOLLOW | OpenFlags.O_NONBLOCK);
        try {
            long size = Libc.statx(fd, "", false).size();
            if (size > maxBytes) {
                throw new ErrnoException("read", name + " (over " + maxBytes + " bytes)", Errno.EFBIG);
            }
            if (size > 0) {
                byte[] exact = new byte[(int) size];
                int done = 0;
                for (int n; done < exact.length && (n = NativeIo.pread(fd, exact, done, exact.length - done, done)) > 0; ) {
                    done += n;
                }
                if (done == exact.length && NativeIo.atEnd(fd, done)) {
                    return exact;
                }
            }
            return readOpen(fd, name, maxBytes);
        } finally {
            Libc.close(fd);
        }
    }

    /** The whole of an open kernel file, from its start; {@code name} is for messages. */
    public static byte[] readOpen(int fd, String name, int maxBytes) throws ErrnoException {
        // Most kernel files are a few hundred bytes: start small, double as needed.
        byte[] out = new byte[Math.min(4096, maxBytes + 1)];
        int size = 0;
        while (true) {
            if (size == out.length) {
                out = Arrays.copyOf(out, (int) Math.min((long) maxBytes + 1, 2L * out.length));
            }
            int n = NativeIo.pread(fd, out, size, out.length - size, size);
            if (n == 0) {
                return Arrays.copyOf(out, size);
            }
            size += n;
            if (size > maxBytes) {
                throw new ErrnoException("read", name + " (over " + maxBytes + " bytes)", Errno.EFBIG);
            }
        }
    }
}
