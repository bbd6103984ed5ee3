package io.driveralias.agent.fs;

import io.driveralias.agent.elf.ByteSource;
import java.io.EOFException;
import java.io.IOException;

/**
 * A regular file opened for reading only after an O_PATH fd and fstat proved it is one, and
 * of a bounded size. FIFOs and device nodes are refused before any read open, so a planted
 * FIFO named like a driver library cannot block the agent.
 */
public final class ReadableFile implements ByteSource, AutoCloseable {

    private final int fd;
    private final FileStat stat;

    private ReadableFile(int fd, FileStat stat) {
        this.fd = fd;
        this.stat = stat;
    }

    /**
     * Turns an O_PATH fd into a readable one. Reopening through the agent's own
     * {@code /proc/self/fd} reaches exactly that inode: no second lookup, no race.
     * Takes ownership of {@code pathFd}.
     */
    public static ReadableFile fromPathFd(int pathFd, String what) throws ErrnoException {
        try {
            FileStat stat = Libc.statx(pathFd, "", false);
            if (!stat.isRegularFile()) {
                throw new ErrnoException("open", what + " (not a regular file: never opened)", Errno.EINVAL);
            }
            if (stat.size() > RootFs.MAX_READ_SIZE) {
                throw new ErrnoException("open", what, Errno.EFBIG);
            }
            int fd = Libc.openHost("/proc/self/fd/" + pathFd,
                    OpenFlags.O_RDONLY | OpenFlags.O_NONBLOCK | OpenFlags.O_NOCTTY);
            return new ReadableFile(fd, stat);
        } finally {
            Libc.close(pathFd);
        }
    }

    public FileStat stat() {
        return stat;
    }

    @Override
    public long size() {
        return stat.size();
    }

    @Override
    public void readFully(long position, byte[] dst, int length) throws IOException {
        readFully(fd, size(), position, dst, length);
    }

    /** pread(2) until {@code length} bytes at {@code position} of a file of {@code size} bytes are in {@code dst}. */
    static void readFully(int fd, long size, long position, byte[] dst, int length) throws IOException {
        if (position < 0 || length < 0 || position > size - length) {
            throw new EOFException("read of " + length + " bytes at " + position + " past the end (" + size + ")");
        }
        int done = 0;
        while (done < length) {
            int n;
            try {
                n = NativeIo.pread(fd, dst, done, length - done, position + done);
            } catch (ErrnoException e) {
                throw new IOException(e.getMessage(), e);
            }
            if (n == 0) {
                throw new EOFException("file shrank while reading at " + (position + done));
            }
            done += n;
        }
    }

    @Override
    public void close() {
        Libc.close(fd);
    }
}
