package io.driveralias.agent.fs;

/**
 * The calls that make a new file or directory and give it its owner, mode and durability
 * (openat with O_CREAT|O_EXCL, mkdirat, fchown, fchownat, fchmod, fsync). Apart from
 * {@link Libc} because only the agent's own new entries ({@link NewFile}, {@link Directory}'s
 * new directories) take them: Libc keeps the opening, reading and link calls every path goes
 * through. Their handles stay in Libc, linked with all the others when it loads (which the
 * warm-up pays for), not at a first container's new directory.
 */
final class LibcNewEntries {

    // Same values on x86_64 and aarch64 (asm-generic), unlike O_DIRECTORY/O_NOFOLLOW.
    private static final int O_RDWR = 02;
    private static final int O_CREAT = 0100;
    private static final int O_EXCL = 0200;

    /**
     * Creates a new regular file {@code name} in {@code dirfd} for writing and reading back:
     * never an existing name, never through a symlink (O_EXCL|O_NOFOLLOW). {@code mode} is
     * still cut by the umask.
     */
    static int createFile(int dirfd, String name, int mode) throws ErrnoException {
        int flags = O_RDWR | O_CREAT | O_EXCL | OpenFlags.O_NOFOLLOW | OpenFlags.O_CLOEXEC;
        try (NativeScratch s = NativeScratch.acquire()) {
            return (int) Libc.check("openat", name, s, (int) Libc.OPENAT.invokeExact(s.errno, dirfd, s.name(name), flags, mode));
        } catch (Throwable t) {
            throw Libc.rethrown("openat", t);
        }
    }

    static void fsync(int fd) throws ErrnoException {
        try (NativeScratch s = NativeScratch.acquire()) {
            Libc.check("fsync", null, s, (int) Libc.FSYNC.invokeExact(s.errno, fd));
        } catch (Throwable t) {
            throw Libc.rethrown("fsync", t);
        }
    }

    static void fchown(int fd, int uid, int gid) throws ErrnoException {
        try (NativeScratch s = NativeScratch.acquire()) {
            Libc.check("fchown", null, s, (int) Libc.FCHOWN.invokeExact(s.errno, fd, uid, gid));
        } catch (Throwable t) {
            throw Libc.rethrown("fchown", t);
        }
    }

    static void mkdirat(int dirfd, String name, int mode) throws ErrnoException {
        try (NativeScratch s = NativeScratch.acquire()) {
            Libc.check("mkdirat", name, s, (int) Libc.MKDIRAT.invokeExact(s.errno, dirfd, s.name(name), mode));
        } catch (Throwable t) {
            throw Libc.rethrown("mkdirat", t);
        }
    }

    /** Changes the owner of a name in {@code dirfd}, never following a symlink. */
    static void fchownat(int dirfd, String name, int uid, int gid) throws ErrnoException {
        try (NativeScratch s = NativeScratch.acquire()) {
            Libc.check("fchownat", name, s, (int) Libc.FCHOWNAT.invokeExact(s.errno, dirfd, s.name(name), uid, gid,
                    OpenFlags.AT_SYMLINK_NOFOLLOW));
        } catch (Throwable t) {
            throw Libc.rethrown("fchownat", t);
        }
    }

    static void fchmod(int fd, int mode) throws ErrnoException {
        try (NativeScratch s = NativeScratch.acquire()) {
            Libc.check("fchmod", null, s, (int) Libc.FCHMOD.invokeExact(s.errno, fd, mode));
        } catch (Throwable t) {
            throw Libc.rethrown("fchmod", t);
        }
    }

    private LibcNewEntries() {
    }
}
