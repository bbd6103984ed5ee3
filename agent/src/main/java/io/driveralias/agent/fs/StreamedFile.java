package io.driveralias.agent.fs;

import java.io.IOException;
import java.io.InputStream;

/**
 * A regular file read as a stream, for files whose size a container's owner decides (Docker's
 * {@code config.v2.json} holds the container's environment): a parser reads it a buffer at a
 * time instead of the agent holding it whole. Opened relative to a directory fd, the last
 * component never followed, a regular file or nothing; bounded at {@code maxBytes}.
 */
public final class StreamedFile extends InputStream {

    private final int fd;
    private final String name;
    private final long maxBytes;
    private long position;
    private boolean closed;

    private StreamedFile(int fd, String name, long maxBytes) {
        this.fd = fd;
        this.name = name;
        this.maxBytes = maxBytes;
    }

    /** @throws ErrnoException ENOENT and the like; EFTYPE-like EINVAL when it is not a regular file */
    public static StreamedFile open(int dirFd, String name, long maxBytes) throws ErrnoException {
        int fd = Libc.openat(dirFd, name, OpenFlags.O_RDONLY | OpenFlags.O_NOFOLLOW | OpenFlags.O_NONBLOCK);
        try {
            if (!Libc.statx(fd, "", false).isRegularFile()) {
                throw new ErrnoException("open", name + " (not a regular file)", Errno.EINVAL);
            }
            return new StreamedFile(fd, name, maxBytes);
        } catch (ErrnoException | RuntimeException e) {
            Libc.close(fd);
            throw e;
        }
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] buffer, int offset, int length) throws IOException {
        if (closed) {
            throw new IOException(name + ": closed");
        }
        if (length == 0) {
            return 0;
        }
        try {
            int n = NativeIo.pread(fd, buffer, offset, length, position);
            if (n <= 0) {
                return -1;
            }
            position += n;
            if (position > maxBytes) {
                throw new IOException(name + ": over " + maxBytes + " bytes");
            }
            return n;
        } catch (ErrnoException e) {
            throw new IOException(e.getMessage(), e);
        }
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            Libc.close(fd);
        }
    }
}
