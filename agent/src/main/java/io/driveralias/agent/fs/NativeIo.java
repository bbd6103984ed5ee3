package io.driveralias.agent.fs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * Reading, writing and waiting on fds the agent holds, through {@link Libc}'s FFM linkage and a
 * {@link NativeScratch}'s buffers: the data goes through one reused native buffer, never a new one.
 */
public final class NativeIo {

    private static final MethodHandle PREAD = Libc.fn("pread",
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG), -1);
    private static final MethodHandle READ = Libc.fn("read",
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG), -1);
    private static final MethodHandle WRITE = Libc.fn("write",
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG), -1);
    private static final MethodHandle GETDENTS64 = Libc.fn("getdents64",
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG), -1);
    private static final MethodHandle POLL = Libc.fn("poll",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT), -1);
    private static final MethodHandle INOTIFY_INIT1 = Libc.fn("inotify_init1",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT), -1);
    private static final MethodHandle INOTIFY_ADD_WATCH = Libc.fn("inotify_add_watch",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT), -1);

    /** Where d_name begins in struct linux_dirent64 (after d_ino, d_off, d_reclen, d_type). */
    private static final int DIRENT_NAME = 19;

    public static final int POLLIN = 0x1;
    public static final int POLLPRI = 0x2;
    public static final int POLLERR = 0x8;
    public static final int POLLHUP = 0x10;
    public static final int POLLNVAL = 0x20;

    public static final int IN_MOVED_TO = 0x80;
    public static final int IN_CREATE = 0x100;
    public static final int IN_DELETE_SELF = 0x400;
    public static final int IN_MOVE_SELF = 0x800;
    public static final int IN_ONLYDIR = 0x01000000;
    public static final int IN_DONT_FOLLOW = 0x02000000;

    private NativeIo() {
    }

    /** Writes all of {@code data}, looping over short writes. */
    public static void writeFully(int fd, byte[] data) throws ErrnoException {
        writeFully(fd, data, data.length);
    }

    /** Writes {@code data[0..length)}, looping over short writes. */
    public static void writeFully(int fd, byte[] data, int length) throws ErrnoException {
        java.util.Objects.checkFromIndexSize(0, length, data.length);
        try (NativeScratch s = NativeScratch.acquire()) {
            MemorySegment buf = s.io();
            int done = 0;
            while (done < length) {
                int chunk = Math.min(length - done, NativeScratch.IO_BYTES);
                MemorySegment.copy(data, done, buf, JAVA_BYTE, 0, chunk);
                long n = Libc.check("write", null, s, (long) WRITE.invokeExact(s.errno, fd, buf, (long) chunk));
                if (n == 0) {
                    throw new ErrnoException("write", null, Errno.EIO);
                }
                done += (int) n;
            }
        } catch (Throwable t) {
            throw Libc.rethrown("write", t);
        }
    }

    /** Reads up to {@code length} bytes at {@code offset}; returns how many were read (0 at EOF). */
    public static int pread(int fd, byte[] dst, int length, long offset) throws ErrnoException {
        return pread(fd, dst, 0, length, offset);
    }

    /**
     * Reads up to {@code length} bytes at file offset {@code offset} into {@code dst} from
     * {@code dstOffset}; returns how many were read (0 at EOF), at most 64 KiB at a time.
     */
    public static int pread(int fd, byte[] dst, int dstOffset, int length, long offset) throws ErrnoException {
        java.util.Objects.checkFromIndexSize(dstOffset, length, dst.length);
        try (NativeScratch s = NativeScratch.acquire()) {
            MemorySegment buf = s.io();
            long chunk = Math.min(length, NativeScratch.IO_BYTES);
            long n = Libc.check("pread", null, s, (long) PREAD.invokeExact(s.errno, fd, buf, chunk, offset));
            MemorySegment.copy(buf, JAVA_BYTE, 0, dst, dstOffset, (int) n);
            return (int) n;
        } catch (Throwable t) {
            throw Libc.rethrown("pread", t);
        }
    }

    /** Whether the file open at {@code fd} ends at {@code offset}: nothing more to read there. */
    public static boolean atEnd(int fd, long offset) throws ErrnoException {
        try (NativeScratch s = NativeScratch.acquire()) {
            return Libc.check("pread", null, s, (long) PREAD.invokeExact(s.errno, fd, s.struct, 1L, offset)) == 0;
        } catch (Throwable t) {
            throw Libc.rethrown("pread", t);
        }
    }

    /**
     * Every entry of an open directory (except {@code .} and {@code ..}). A hostile container can
     * fill a directory with millions of names, so past {@code maxEntries} this fails with EFBIG.
     */
    public static List<Libc.RawDirent> readDirectory(int dirfd, int maxEntries) throws ErrnoException {
        List<Libc.RawDirent> entries = new ArrayList<>();
        forEachEntry(dirfd, maxEntries, (name, type) -> entries.add(new Libc.RawDirent(name, type)));
        return entries;
    }

    /** Sees one directory entry: its name and DT_* type. */
    @FunctionalInterface
    public interface DirentVisitor {
        void visit(String name, int type);
    }

    /**
     * Hands every entry of an open directory (except {@code .} and {@code ..}) to {@code visitor}
     * as getdents64 returns them, keeping none: a directory of any size costs one buffer. Past
     * {@code maxEntries} this fails with EFBIG.
     */
    public static void forEachEntry(int dirfd, int maxEntries, DirentVisitor visitor) throws ErrnoException {
        int seen = 0;
        try (NativeScratch s = NativeScratch.acquire()) {
            MemorySegment buf = s.io();
            long n;
            while ((n = Libc.check("getdents64", null, s,
                    (long) GETDENTS64.invokeExact(s.errno, dirfd, buf, (long) NativeScratch.IO_BYTES))) > 0) {
                for (long pos = 0; pos < n; ) {
                    int reclen = Short.toUnsignedInt(buf.get(JAVA_SHORT, pos + 16));
                    if (reclen <= DIRENT_NAME || pos + reclen > n) {
                        throw new ErrnoException("getdents64", "(corrupt record)", Errno.EIO);
                    }
                    int type = Byte.toUnsignedInt(buf.get(JAVA_BYTE, pos + 18));
                    String name = s.string(buf, pos + DIRENT_NAME, nameLength(buf, pos + DIRENT_NAME, pos + reclen));
                    if (!name.equals(".") && !name.equals("..")) {
                        if (seen++ >= maxEntries) {
                            throw new ErrnoException("getdents64", "(more than " + maxEntries + " entries)", Errno.EFBIG);
                        }
                        visitor.visit(name, type);
                    }
                    pos += reclen;
                }
            }
        } catch (Throwable t) {
            throw Libc.rethrown("getdents64", t);
        }
    }

    /** The length of the NUL-terminated name at {@code from}, which ends before its record does ({@code end}). */
    private static int nameLength(MemorySegment buf, long from, long end) throws ErrnoException {
        for (long i = from; i < end; i++) {
            if (buf.get(JAVA_BYTE, i) == 0) {
                return (int) (i - from);
            }
        }
        throw new ErrnoException("getdents64", "(corrupt record)", Errno.EIO);
    }

    /**
     * The first line of the file open at {@code fd}, read from its start, that begins with
     * {@code prefix}, without its newline; empty when no line does. The file is scanned as it
     * is read and only that line is kept. Past {@code maxBytes} of file, or a matching line
     * longer than {@code maxLine}, this fails with EFBIG.
     */
    public static Optional<byte[]> findLine(int fd, byte[] prefix, int maxLine, long maxBytes) throws ErrnoException {
        try (NativeScratch s = NativeScratch.acquire()) {
            MemorySegment buf = s.io();
            byte[] piece = s.bytes;
            // Prefix bytes matched at the start of the current line; -1 once it cannot match.
            int matched = 0;
            byte[] line = null;
            int length = 0;
            long offset = 0;
            while (true) {
                long n = Libc.check("pread", null, s,
                        (long) PREAD.invokeExact(s.errno, fd, buf, (long) NativeScratch.IO_BYTES, offset));
                if (n == 0) {
                    return line == null ? Optional.empty() : Optional.of(Arrays.copyOf(line, length));
                }
                offset += n;
                if (offset > maxBytes) {
                    throw new ErrnoException("read", "(over " + maxBytes + " bytes)", Errno.EFBIG);
                }
                for (long from = 0; from < n; from += piece.length) {
                    int count = (int) Math.min(piece.length, n - from);
                    MemorySegment.copy(buf, JAVA_BYTE, from, piece, 0, count);
                    for (int i = 0; i < count; i++) {
                        byte b = piece[i];
                        if (line != null) {
                            if (b == '\n') {
                                return Optional.of(Arrays.copyOf(line, length));
                            }
                            if (length == maxLine) {
                                throw new ErrnoException("read", "(a line over " + maxLine + " bytes)", Errno.EFBIG);
                            }
                            if (length == line.length) {
                                line = Arrays.copyOf(line, Math.min(maxLine, line.length * 2));
                            }
                            line[length++] = b;
                        } else if (b == '\n') {
                            matched = 0;
                        } else if (matched >= 0) {
                            matched = b == prefix[matched] ? matched + 1 : -1;
                            if (matched == prefix.length) {
                                line = Arrays.copyOf(prefix, Math.max(256, prefix.length));
                                length = prefix.length;
                            }
                        }
                    }
                }
            }
        } catch (Throwable t) {
            throw Libc.rethrown("read", t);
        }
    }

    /** A non-blocking inotify instance (close-on-exec). */
    public static int inotifyInit() throws ErrnoException {
        try (NativeScratch s = NativeScratch.acquire()) {
            return (int) Libc.check("inotify_init1", null, s,
                    (int) INOTIFY_INIT1.invokeExact(s.errno, OpenFlags.O_CLOEXEC | OpenFlags.O_NONBLOCK));
        } catch (Throwable t) {
            throw Libc.rethrown("inotify_init1", t);
        }
    }

    /** Watches a host directory (a path Docker reported, UTF-8) for the events in {@code mask}. */
    public static void inotifyWatch(int inotifyFd, String hostPath, int mask) throws ErrnoException {
        try (NativeScratch s = NativeScratch.acquire()) {
            Libc.check("inotify_add_watch", hostPath, s,
                    (int) INOTIFY_ADD_WATCH.invokeExact(s.errno, inotifyFd, s.hostPath(hostPath), mask));
        } catch (Throwable t) {
            throw Libc.rethrown("inotify_add_watch", t);
        }
    }

    /**
     * Waits up to {@code timeoutMillis} for {@code events} on one fd; returns what poll(2) reported
     * (POLLERR, POLLHUP and POLLNVAL included whether asked for or not), 0 when the time ran out
     * or a signal interrupted the wait.
     */
    public static int poll(int fd, int events, int timeoutMillis) throws ErrnoException {
        try (NativeScratch s = NativeScratch.acquire()) {
            MemorySegment pollfd = s.struct;
            pollfd.set(JAVA_INT, 0, fd);
            pollfd.set(JAVA_SHORT, 4, (short) events);
            pollfd.set(JAVA_SHORT, 6, (short) 0);
            int n = (int) POLL.invokeExact(s.errno, pollfd, 1L, timeoutMillis);
            if (n < 0) {
                int errno = Libc.errno(s);
                if (errno == Errno.EINTR) {
                    return 0;
                }
                throw new ErrnoException("poll", null, errno);
            }
            return n == 0 ? 0 : Short.toUnsignedInt(pollfd.get(JAVA_SHORT, 6));
        } catch (Throwable t) {
            throw Libc.rethrown("poll", t);
        }
    }

    /** Reads and drops whatever a non-blocking fd (an inotify instance) has ready. */
    public static void drain(int fd) throws ErrnoException {
        try (NativeScratch s = NativeScratch.acquire()) {
            MemorySegment buf = s.io();
            while (true) {
                long n = (long) READ.invokeExact(s.errno, fd, buf, (long) NativeScratch.IO_BYTES);
                if (n <= 0) {
                    int errno = n == 0 ? 0 : Libc.errno(s);
                    if (n == 0 || errno == Errno.EAGAIN) {
                        return;
                    }
                    if (errno != Errno.EINTR) {
                        throw new ErrnoException("read", null, errno);
                    }
                }
            }
        } catch (Throwable t) {
            throw Libc.rethrown("read", t);
        }
    }
}
