package io.driveralias.agent.fs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * The system calls the agent needs, through Java's FFM API. Nothing here resolves a path on
 * its own: callers pass a directory fd and a single name, or go through a {@link PathResolver}.
 *
 * <p>Names from a container are arbitrary bytes. They travel as ISO-8859-1 strings, which map
 * each byte to one char and back, so a name read by getdents is written back byte for byte.
 * Host paths chosen by the operator (a {@code --root} directory) are UTF-8. Each call borrows
 * its native memory from a {@link NativeScratch} and gives it back before it returns.
 */
public final class Libc {

    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBC = LINKER.defaultLookup();
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");
    private static final VarHandle ERRNO = Linker.Option.captureStateLayout()
            .varHandle(MemoryLayout.PathElement.groupElement("errno"));

    private static final long SYS_PIDFD_SEND_SIGNAL = 424;
    private static final long SYS_PIDFD_OPEN = 434;
    private static final long SYS_OPENAT2 = 437;

    static final MethodHandle OPENAT = fn("openat",
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
    private static final MethodHandle GETEUID = fn("geteuid", FunctionDescriptor.of(JAVA_INT), -1);
    private static final MethodHandle SYMLINKAT = fn("symlinkat",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS), -1);
    private static final MethodHandle RENAMEAT2 = fn("renameat2",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT), -1);
    private static final MethodHandle UNLINKAT = fn("unlinkat",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT), -1);
    /** The calls of {@link LibcNewEntries}, linked here with the others. */
    static final MethodHandle FCHOWNAT = fn("fchownat",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT), -1);
    static final MethodHandle FCHMOD = fn("fchmod",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT), -1);
    static final MethodHandle FSYNC = fn("fsync", FunctionDescriptor.of(JAVA_INT, JAVA_INT), -1);
    static final MethodHandle FCHOWN = fn("fchown",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT), -1);
    static final MethodHandle MKDIRAT = fn("mkdirat",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT), -1);
    private static final MethodHandle FGETXATTR = fn("fgetxattr",
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG), -1);

    /** struct statx (256 bytes, in the scratch's struct buffer) is laid out the same on every architecture. */
    private static final int STATX_BASIC_STATS = 0x7ff;
    private static final int STATX_MNT_ID = 0x1000;
    private static final int PATH_MAX = 4096;

    public static final long PROC_SUPER_MAGIC = 0x9fa0;

    private Libc() {
    }

    static MethodHandle fn(String name, FunctionDescriptor descriptor, int firstVariadic) {
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
        try (NativeScratch s = NativeScratch.acquire()) {
            return (int) check("openat", name, s,
                    (int) OPENAT.invokeExact(s.errno, dirfd, s.name(name), flags | OpenFlags.O_CLOEXEC, 0));
        } catch (Throwable t) {
            throw rethrown("openat", t);
        }
    }

    /** Opens a host path chosen by the operator (UTF-8), never a path inside a container. */
    public static int openHost(String hostPath, int flags) throws ErrnoException {
        try (NativeScratch s = NativeScratch.acquire()) {
            return (int) check("open", hostPath, s, (int) OPENAT.invokeExact(s.errno, OpenFlags.AT_FDCWD,
                    s.hostPath(hostPath), flags | OpenFlags.O_CLOEXEC, 0));
        } catch (Throwable t) {
            throw rethrown("open", t);
        }
    }

    /** openat2(2); throws ENOSYS on kernels before 5.6 (and under seccomp profiles that block it). */
    public static int openat2(int dirfd, String path, int flags, long resolve) throws ErrnoException {
        try (NativeScratch s = NativeScratch.acquire()) {
            MemorySegment how = s.struct;
            how.set(JAVA_LONG, 0, (long) (flags | OpenFlags.O_CLOEXEC));
            how.set(JAVA_LONG, 8, 0L);
            how.set(JAVA_LONG, 16, resolve);
            return (int) check("openat2", path, s, (long) SYSCALL4.invokeExact(s.errno, SYS_OPENAT2, (long) dirfd,
                    s.name(path).address(), how.address(), 24L));
        } catch (Throwable t) {
            throw rethrown("openat2", t);
        }
    }

    /** Closes an fd; errors are ignored because Linux releases the fd even when close fails. */
    public static void close(int fd) {
        if (fd < 0) {
            return;
        }
        try (NativeScratch s = NativeScratch.acquire()) {
            // EINTR/EIO on close: the descriptor is gone either way.
            int ignored = (int) CLOSE.invokeExact(s.errno, fd);
        } catch (Throwable t) {
            throw unexpected("close", t);
        }
    }

    /** statx(2) of {@code name} in {@code dirfd}; an empty name stats the fd itself. */
    public static FileStat statx(int dirfd, String name, boolean followLast) throws ErrnoException {
        int flags = (followLast ? 0 : OpenFlags.AT_SYMLINK_NOFOLLOW) | (name.isEmpty() ? OpenFlags.AT_EMPTY_PATH : 0);
        try (NativeScratch s = NativeScratch.acquire()) {
            MemorySegment buf = s.struct;
            check("statx", name, s, (int) STATX.invokeExact(s.errno, dirfd, s.name(name), flags,
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
        } catch (Throwable t) {
            throw rethrown("statx", t);
        }
    }

    private static long timestamp(MemorySegment statx, long offset) {
        return statx.get(JAVA_LONG, offset) * 1_000_000_000L + Integer.toUnsignedLong(statx.get(JAVA_INT, offset + 8));
    }

    /** The filesystem magic of an fd (f_type is the first, word-sized field on 64-bit Linux). */
    public static long filesystemType(int fd) throws ErrnoException {
        try (NativeScratch s = NativeScratch.acquire()) {
            check("fstatfs", null, s, (int) FSTATFS.invokeExact(s.errno, fd, s.struct));
            return s.struct.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrown("fstatfs", t);
        }
    }

    /** The text of a symlink, never followed. An empty name reads the O_PATH fd itself. */
    public static String readlinkat(int dirfd, String name) throws ErrnoException {
        try (NativeScratch s = NativeScratch.acquire()) {
            MemorySegment buf = s.io();
            long n = check("readlinkat", name, s,
                    (long) READLINKAT.invokeExact(s.errno, dirfd, s.name(name), buf, (long) PATH_MAX));
            if (n >= PATH_MAX) {
                throw new ErrnoException("readlinkat", name, Errno.ENAMETOOLONG);
            }
            return s.string(buf, 0, (int) n);
        } catch (Throwable t) {
            throw rethrown("readlinkat", t);
        }
    }

    public static void symlinkat(String target, int dirfd, String name) throws ErrnoException {
        try (NativeScratch s = NativeScratch.acquire()) {
            check("symlinkat", name, s, (int) SYMLINKAT.invokeExact(s.errno, s.secondName(target), dirfd, s.name(name)));
        } catch (Throwable t) {
            throw rethrown("symlinkat", t);
        }
    }

    /** renameat2(2) within one directory; {@code flags} is 0, RENAME_NOREPLACE or RENAME_EXCHANGE. */
    public static void renameat2(int dirfd, String from, String to, int flags) throws ErrnoException {
        try (NativeScratch s = NativeScratch.acquire()) {
            check("renameat2", to, s,
                    (int) RENAMEAT2.invokeExact(s.errno, dirfd, s.secondName(from), dirfd, s.name(to), flags));
        } catch (Throwable t) {
            throw rethrown("renameat2", t);
        }
    }

    public static void unlinkat(int dirfd, String name, int flags) throws ErrnoException {
        try (NativeScratch s = NativeScratch.acquire()) {
            check("unlinkat", name, s, (int) UNLINKAT.invokeExact(s.errno, dirfd, s.name(name), flags));
        } catch (Throwable t) {
            throw rethrown("unlinkat", t);
        }
    }

    /** An extended attribute of an open (not O_PATH) fd, at most 256 bytes; empty if it has none. */
    public static java.util.Optional<byte[]> fgetxattr(int fd, String name) throws ErrnoException {
        try (NativeScratch s = NativeScratch.acquire()) {
            MemorySegment buf = s.struct;
            long n = check("fgetxattr", name, s, (long) FGETXATTR.invokeExact(s.errno, fd, s.name(name), buf, 256L));
            return java.util.Optional.of(buf.asSlice(0, n).toArray(JAVA_BYTE));
        } catch (ErrnoException e) {
            if (e.is(Errno.ENODATA) || e.is(Errno.EOPNOTSUPP)) {
                return java.util.Optional.empty();
            }
            throw e;
        } catch (Throwable t) {
            throw unexpected("fgetxattr", t);
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
        try (NativeScratch s = NativeScratch.acquire()) {
            return check(what, null, s, (long) SYSCALL4.invokeExact(s.errno, number, a, b, 0L, 0L));
        } catch (Throwable t) {
            throw rethrown(what, t);
        }
    }

    /** The effective uid of this process (geteuid never fails). */
    public static int geteuid() {
        try (NativeScratch s = NativeScratch.acquire()) {
            return (int) GETEUID.invokeExact(s.errno);
        } catch (Throwable t) {
            throw unexpected("geteuid", t);
        }
    }

    /** A call's result, or its errno (captured into the scratch) thrown when it is negative. */
    static long check(String op, String path, NativeScratch s, long result) throws ErrnoException {
        if (result < 0) {
            throw new ErrnoException(op, path, errno(s));
        }
        return result;
    }

    /** The errno the last call through {@code s} captured. */
    static int errno(NativeScratch s) {
        return (int) ERRNO.get(s.errno, 0L);
    }

    /** An errno is the caller's to handle; any other failure of a downcall (a linkage error) is a bug. */
    static ErrnoException rethrown(String op, Throwable t) {
        if (t instanceof ErrnoException e) {
            return e;
        }
        throw unexpected(op, t);
    }

    private static IllegalStateException unexpected(String op, Throwable t) {
        return new IllegalStateException(op + ": native call failed", t);
    }
}
