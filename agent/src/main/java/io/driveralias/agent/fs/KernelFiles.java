package io.driveralias.agent.fs;

import java.io.ByteArrayOutputStream;

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
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] chunk = new byte[64 * 1024];
            long offset = 0;
            while (true) {
                int n = Libc.pread(fd, chunk, chunk.length, offset);
                if (n == 0) {
                    return out.toByteArray();
                }
                out.write(chunk, 0, n);
                offset += n;
                if (out.size() > maxBytes) {
                    throw new ErrnoException("read", name + " (over " + maxBytes + " bytes)", Errno.EFBIG);
                }
            }
        } finally {
            Libc.close(fd);
        }
    }
}
