package io.driveralias.agent.fs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The system calls the agent needs, through Java's FFM API. Nothing here resolves a path on
 * its own: callers pass a directory fd and a single name, or go through a {@link PathResolver}.
 *
 * <p>Names from a container are arbitrary bytes. They travel as ISO-8859-1 strings, which map
 * each byte to one char and back, so a name read by getdents is written back byte for byte.
 * Host paths chosen by the operator (a {@code --root} directory) are UTF-8.
 */
public final class Libc {

    private static final Charset NAMES = StandardCharsets.ISO_8859_1;
    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBC = LINKER.defaultLookup();
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");
    private static final VarHandle ERRNO = Linker.Option.captureStateLayout()
            .varHandle(MemoryLayout.PathElement.groupElement("errno"));

    private static final long SYS_PIDFD_SEND_SIGNAL = 424;
    private static final long SYS_PIDFD_OPEN = 434;
    private static final long SYS_OPENAT2 = 437;

    private static final MethodHandle OPENAT = fn("openat",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT), 3);
    private static final MethodHandle SYSCALL4 = fn("syscall",
            FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG), 1);
    private static final MethodHandle CLOSE = fn("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT), -1);
    private static final MethodHandle STATX = fn("statx",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS), -1);
    private static final MethodHandle FSTATFS = fn("fstatfs",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS), -1);
    private static final MethodHandle READLINKAT = fn("readlinkat",
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG), -1);
    private static final MethodHandle SYMLINKAT = fn("symlinkat",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS), -1);
    private static final MethodHandle RENAMEAT2 = fn("renameat2",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT), -1);
    private static final MethodHandle UNLINKAT = fn("unlinkat",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT), -1);
    private static final MethodHandle MKDIRAT = fn("mkdirat",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT), -1);
    private static final MethodHandle FCHOWNAT = fn("fchownat",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT), -1);
    private static final MethodHandle FCHMOD = fn("fchmod",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT), -1);
    private static final MethodHandle PREAD = fn("pread",
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG), -1);
    private static final MethodHandle WRITE = fn("write",
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG), -1);
    private static final MethodHandle FSYNC = fn("fsync", FunctionDescriptor.of(JAVA_INT, JAVA_INT), -1);
    private static final MethodHandle FCHOWN = fn("fchown",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT), -1);
    private static final MethodHandle FGETXATTR = fn("fgetxattr",
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG), -1);
    private static final MethodHandle GETDENTS64 = fn("getdents64",
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG), -1);
    private static final MethodHandle GETEUID = fn("geteuid", FunctionDescriptor.of(JAVA_INT), -1);

    /** struct statx is 256 bytes and laid out the same on every architecture. */
    private static final int STATX_SIZE = 256;
    private static final int STATX_BASIC_STATS = 0x7ff;
    private static final int STATX_MNT_ID = 0x1000;
    private static final int PATH_MAX = 4096;
    private static final int DIRENT_BUFFER = 64 * 1024;

    public static final long PROC_SUPER_MAGIC = 0x9fa0;

    private Libc() {
    }

    private static MethodHandle fn(String name, FunctionDescriptor descriptor, int firstVariadic) {
        MemorySegment symbol = LIBC.find(name).orElseThrow(
                () -> new ExceptionInInitializerError("libc has no " + name + "(): glibc 2.30 or newer is required"));
        return firstVariadic < 0
                ? LINKER.downcallHandle(symbol, descriptor, CAPTURE_ERRNO)
                : LINKER.downcallHandle(symbol, descriptor, CAPTURE_ERRNO, Linker.Option.firstVariadicArg(firstVariadic));
    }

    /** One directory entry as getdents64 reports it; {@code type} is the DT_* value. */
    public record RawDirent(String name, int type) {
        public static final int DT_UNKNOWN = 0;
        public static final int DT_DIR = 4;
        public static final int DT_REG = 8;
        public static final int DT_LNK = 10;
    }

    public static int openat(int dirfd, String name, int flags) throws ErrnoException {
        return call("openat", name, (arena, errno) ->
                (int) OPENAT.invokeExact(errno, dirfd, name(arena, name), flags | OpenFlags.O_CLOEXEC, 0));
    }

    // Same values on x86_64 and aarch64 (asm-generic), unlike O_DIRECTORY/O_NOFOLLOW.
    private static final int O_RDWR = 02;
    private static final int O_CREAT = 0100;
    private static final int O_EXCL = 0200;

    /**
     * Creates a new regular file {@code name} in {@code dirfd} for writing and reading back:
     * never an existing name, never through a symlink (O_EXCL|O_NOFOLLOW). {@code mode} is
     * still cut by the umask.
     */
    public static int createFile(int dirfd, String name, int mode) throws ErrnoException {
        int flags = O_RDWR | O_CREAT | O_EXCL | OpenFlags.O_NOFOLLOW | OpenFlags.O_CLOEXEC;
        return call("openat", name, (arena, errno) ->
                (int) OPENAT.invokeExact(errno, dirfd, name(arena, name), flags, mode));
    }

    /** Writes all of {@code data}, looping over short writes. */
    public static void writeFully(int fd, byte[] data) throws ErrnoException {
        writeFully(fd, data, data.length);
    }

    /** Writes {@code data[0..length)}, looping over short writes. */
    public static void writeFully(int fd, byte[] data, int length) throws ErrnoException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(Math.max(1, length));
            MemorySegment.copy(data, 0, buf, JAVA_BYTE, 0, length);
            long done = 0;
            while (done < length) {
                long from = done;
                long n = call("write", null, (a, errno) ->
                        (long) WRITE.invokeExact(errno, fd, buf.asSlice(from), (long) length - from));
                if (n == 0) {
                    throw new ErrnoException("write", null, Errno.EIO);
                }
                done += n;
            }
        }
    }

    public static void fsync(int fd) throws ErrnoException {
        call("fsync", null, (arena, errno) -> (int) FSYNC.invokeExact(errno, fd));
    }

    public static void fchown(int fd, int uid, int gid) throws ErrnoException {
        call("fchown", null, (arena, errno) -> (int) FCHOWN.invokeExact(errno, fd, uid, gid));
    }

    /** Opens a host path chosen by the operator (UTF-8), never a path inside a container. */
    public static int openHost(String hostPath, int flags) throws ErrnoException {
        return call("open", hostPath, (arena, errno) -> (int) OPENAT.invokeExact(errno, OpenFlags.AT_FDCWD,
                string(arena, hostPath, StandardCharsets.UTF_8), flags | OpenFlags.O_CLOEXEC, 0));
    }

    /** openat2(2); throws ENOSYS on kernels before 5.6 (and under seccomp profiles that block it). */
    public static int openat2(int dirfd, String path, int flags, long resolve) throws ErrnoException {
        return call("openat2", path, (arena, errno) -> {
            MemorySegment how = arena.allocate(24, 8);
            how.set(JAVA_LONG, 0, (long) (flags | OpenFlags.O_CLOEXEC));
            how.set(JAVA_LONG, 8, 0L);
            how.set(JAVA_LONG, 16, resolve);
            return (int) (long) SYSCALL4.invokeExact(errno, SYS_OPENAT2, (long) dirfd,
                    name(arena, path).address(), how.address(), 24L);
        });
    }

    /** Closes an fd; errors are ignored because Linux releases the fd even when close fails. */
    public static void close(int fd) {
        if (fd < 0) {
            return;
        }
        try {
            call("close", null, (arena, errno) -> (int) CLOSE.invokeExact(errno, fd));
        } catch (ErrnoException ignored) {
            // EINTR/EIO on close: the descriptor is gone either way.
        }
    }

    /** statx(2) of {@code name} in {@code dirfd}; an empty name stats the fd itself. */
    public static FileStat statx(int dirfd, String name, boolean followLast) throws ErrnoException {
        int flags = (followLast ? 0 : OpenFlags.AT_SYMLINK_NOFOLLOW) | (name.isEmpty() ? OpenFlags.AT_EMPTY_PATH : 0);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(STATX_SIZE, 8);
            call("statx", name, (a, errno) -> (int) STATX.invokeExact(errno, dirfd, name(a, name), flags,
                    STATX_BASIC_STATS | STATX_MNT_ID, buf));
            int mask = buf.get(JAVA_INT, 0);
            long dev = ((long) buf.get(JAVA_INT, 136) << 32) | (buf.get(JAVA_INT, 140) & 0xffffffffL);
            long mountId = (mask & STATX_MNT_ID) != 0 ? buf.get(JAVA_LONG, 144) : 0L;
            return new FileStat(
                    Short.toUnsignedInt(buf.get(JAVA_SHORT, 28)),
                    buf.get(JAVA_INT, 20), buf.get(JAVA_INT, 24),
                    buf.get(JAVA_LONG, 32), buf.get(JAVA_LONG, 40), dev, mountId,
                    timestamp(buf, 112), timestamp(buf, 96),
                    ((long) buf.get(JAVA_INT, 128) << 32) | (buf.get(JAVA_INT, 132) & 0xffffffffL));
        }
    }

    private static long timestamp(MemorySegment statx, long offset) {
        return statx.get(JAVA_LONG, offset) * 1_000_000_000L + Integer.toUnsignedLong(statx.get(JAVA_INT, offset + 8));
    }

    /** The filesystem magic of an fd (f_type is the first, word-sized field on 64-bit Linux). */
    public static long filesystemType(int fd) throws ErrnoException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(256, 8);
            call("fstatfs", null, (a, errno) -> (int) FSTATFS.invokeExact(errno, fd, buf));
            return buf.get(JAVA_LONG, 0);
        }
    }

    /** The text of a symlink, never followed. An empty name reads the O_PATH fd itself. */
    public static String readlinkat(int dirfd, String name) throws ErrnoException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(PATH_MAX);
            long n = call("readlinkat", name, (a, errno) ->
                    (long) READLINKAT.invokeExact(errno, dirfd, name(a, name), buf, (long) PATH_MAX));
            if (n >= PATH_MAX) {
                throw new ErrnoException("readlinkat", name, Errno.ENAMETOOLONG);
            }
            return new String(buf.asSlice(0, n).toArray(JAVA_BYTE), NAMES);
        }
    }

    public static void symlinkat(String target, int dirfd, String name) throws ErrnoException {
        call("symlinkat", name, (arena, errno) ->
                (int) SYMLINKAT.invokeExact(errno, name(arena, target), dirfd, name(arena, name)));
    }

    /** renameat2(2) within one directory; {@code flags} is 0, RENAME_NOREPLACE or RENAME_EXCHANGE. */
    public static void renameat2(int dirfd, String from, String to, int flags) throws ErrnoException {
        call("renameat2", to, (arena, errno) ->
                (int) RENAMEAT2.invokeExact(errno, dirfd, name(arena, from), dirfd, name(arena, to), flags));
    }

    public static void unlinkat(int dirfd, String name, int flags) throws ErrnoException {
        call("unlinkat", name, (arena, errno) -> (int) UNLINKAT.invokeExact(errno, dirfd, name(arena, name), flags));
    }

    public static void mkdirat(int dirfd, String name, int mode) throws ErrnoException {
        call("mkdirat", name, (arena, errno) -> (int) MKDIRAT.invokeExact(errno, dirfd, name(arena, name), mode));
    }

    /** Changes the owner of a name in {@code dirfd}, never following a symlink. */
    public static void fchownat(int dirfd, String name, int uid, int gid) throws ErrnoException {
        call("fchownat", name, (arena, errno) -> (int) FCHOWNAT.invokeExact(errno, dirfd, name(arena, name),
                uid, gid, OpenFlags.AT_SYMLINK_NOFOLLOW));
    }

    public static void fchmod(int fd, int mode) throws ErrnoException {
        call("fchmod", null, (arena, errno) -> (int) FCHMOD.invokeExact(errno, fd, mode));
    }

    /** An extended attribute of an open (not O_PATH) fd, at most 256 bytes; empty if it has none. */
    public static java.util.Optional<byte[]> fgetxattr(int fd, String name) throws ErrnoException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(256);
            long n = call("fgetxattr", name, (a, errno) ->
                    (long) FGETXATTR.invokeExact(errno, fd, name(a, name), buf, 256L));
            return java.util.Optional.of(buf.asSlice(0, n).toArray(JAVA_BYTE));
        } catch (ErrnoException e) {
            if (e.is(Errno.ENODATA) || e.is(Errno.EOPNOTSUPP)) {
                return java.util.Optional.empty();
            }
            throw e;
        }
    }

    /** Reads up to {@code length} bytes at {@code offset}; returns how many were read (0 at EOF). */
    public static int pread(int fd, byte[] dst, int length, long offset) throws ErrnoException {
        if (length > ReadScratch.SIZE) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment buf = arena.allocate(Math.max(1, length));
                long n = call("pread", null, (a, errno) ->
                        (long) PREAD.invokeExact(errno, fd, buf, (long) length, offset));
                MemorySegment.copy(buf, JAVA_BYTE, 0, dst, 0, (int) n);
                return (int) n;
            }
        }
        // The common small read (a page of a cache, an ELF header) allocates nothing: a scan of
        // a large file makes a million of them.
        ReadScratch scratch = READ_SCRATCH.get();
        long n;
        try {
            n = (long) PREAD.invokeExact(scratch.errno, fd, scratch.buffer, (long) length, offset);
        } catch (Throwable t) {
            throw new IllegalStateException("pread: native call failed", t);
        }
        if (n < 0) {
            throw new ErrnoException("pread", null, (int) ERRNO.get(scratch.errno, 0L));
        }
        MemorySegment.copy(scratch.buffer, JAVA_BYTE, 0, dst, 0, (int) n);
        return (int) n;
    }

    /** Per thread, for {@link #pread}: off-heap, freed with the thread (Arena.ofAuto). */
    private static final class ReadScratch {
        static final int SIZE = 16 * 1024;
        final MemorySegment buffer = Arena.ofAuto().allocate(SIZE, 8);
        final MemorySegment errno = Arena.ofAuto().allocate(Linker.Option.captureStateLayout());
    }

    private static final ThreadLocal<ReadScratch> READ_SCRATCH = ThreadLocal.withInitial(ReadScratch::new);

    /**
     * Every entry of an open directory (except {@code .} and {@code ..}). A hostile container can
     * fill a directory with millions of names, so past {@code maxEntries} this fails with EFBIG.
     */
    public static List<RawDirent> readDirectory(int dirfd, int maxEntries) throws ErrnoException {
        List<RawDirent> entries = new ArrayList<>();
        forEachEntry(dirfd, maxEntries, (name, type) -> entries.add(new RawDirent(name, type)));
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
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(DIRENT_BUFFER, 8);
            long n;
            while ((n = call("getdents64", null, (a, errno) ->
                    (long) GETDENTS64.invokeExact(errno, dirfd, buf, (long) DIRENT_BUFFER))) > 0) {
                for (long pos = 0; pos < n; ) {
                    int reclen = Short.toUnsignedInt(buf.get(JAVA_SHORT, pos + 16));
                    int type = Byte.toUnsignedInt(buf.get(JAVA_BYTE, pos + 18));
                    String name = buf.getString(pos + 19, NAMES);
                    if (!name.equals(".") && !name.equals("..")) {
                        if (seen++ >= maxEntries) {
                            throw new ErrnoException("getdents64", "(more than " + maxEntries + " entries)", Errno.EFBIG);
                        }
                        visitor.visit(name, type);
                    }
                    if (reclen == 0) {
                        throw new ErrnoException("getdents64", "(corrupt record)", Errno.EIO);
                    }
                    pos += reclen;
                }
            }
        }
    }

    /** The effective uid of this process (geteuid never fails). */
    public static int geteuid() {
        try {
            return call("geteuid", null, (arena, errno) -> (int) GETEUID.invokeExact(errno));
        } catch (ErrnoException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A pidfd for {@code pid}, or ENOSYS before Linux 5.3. */
    public static int pidfdOpen(int pid) throws ErrnoException {
        return (int) syscall("pidfd_open", SYS_PIDFD_OPEN, pid, 0);
    }

    /** Signal 0 through a pidfd: succeeds while the process lives, ESRCH once it has exited. */
    public static void pidfdSignal0(int pidfd) throws ErrnoException {
        syscall("pidfd_send_signal", SYS_PIDFD_SEND_SIGNAL, pidfd, 0);
    }

    private static long syscall(String what, long number, long a, long b) throws ErrnoException {
        return call(what, null, (arena, errno) -> (long) SYSCALL4.invokeExact(errno, number, a, b, 0L, 0L));
    }

    /** One native call: a fresh confined arena, errno captured, a negative result thrown as errno. */
    @FunctionalInterface
    private interface NativeCall<T extends Number> {
        T invoke(Arena arena, MemorySegment errno) throws Throwable;
    }

    private static <T extends Number> T call(String op, String path, NativeCall<T> call) throws ErrnoException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = arena.allocate(Linker.Option.captureStateLayout());
            T result = call.invoke(arena, errno);
            if (result.longValue() < 0) {
                throw new ErrnoException(op, path, (int) ERRNO.get(errno, 0L));
            }
            return result;
        } catch (ErrnoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(op + ": native call failed", t);
        }
    }

    private static MemorySegment name(Arena arena, String name) throws ErrnoException {
        return string(arena, name, NAMES);
    }

    private static MemorySegment string(Arena arena, String s, Charset charset) throws ErrnoException {
        if (s.indexOf('\0') >= 0) {
            throw new ErrnoException("path", "(contains NUL)", Errno.EINVAL);
        }
        if (charset == NAMES && !NAMES.newEncoder().canEncode(s)) {
            throw new ErrnoException("path", s, Errno.EINVAL);
        }
        return arena.allocateFrom(s, charset);
    }

}
