package io.driveralias.agent.fs;

import java.util.Optional;

/** {@link PathResolver} on openat2(2) with RESOLVE_IN_ROOT: the kernel does the walk atomically. */
public final class Openat2Resolver implements PathResolver {

    /**
     * openat2 answers EAGAIN when a rename or mount raced the lookup. A container can make that
     * happen on purpose, so retries are bounded and the last EAGAIN is the answer.
     */
    private static final int MAX_ATTEMPTS = 32;

    /**
     * Probes openat2 once: empty where it works, else the errno that refused it. ENOSYS: a
     * kernel before 5.6, or a seccomp profile answering ENOSYS for syscalls it does not know.
     * EPERM: a seccomp profile that predates openat2 (Docker 19.03's default) refuses it even
     * where the kernel has it. Any other answer means the syscall exists and is let through.
     */
    static Optional<String> whyUnavailable() {
        int fd = -1;
        try {
            fd = Libc.openat2(OpenFlags.AT_FDCWD, "/", OpenFlags.O_PATH | OpenFlags.O_DIRECTORY,
                    OpenFlags.RESOLVE_NO_MAGICLINKS);
            return Optional.empty();
        } catch (ErrnoException e) {
            return e.is(Errno.ENOSYS) || e.is(Errno.EPERM)
                    ? Optional.of(Errno.name(e.errno())) : Optional.empty();
        } finally {
            Libc.close(fd);
        }
    }

    @Override
    public int open(int rootFd, String path, int flags, boolean noXdev) throws ErrnoException {
        PathResolver.checkFlags(flags);
        long resolve = OpenFlags.RESOLVE_IN_ROOT | OpenFlags.RESOLVE_NO_MAGICLINKS
                | (noXdev ? OpenFlags.RESOLVE_NO_XDEV : 0);
        for (int attempt = 1; ; attempt++) {
            try {
                return Libc.openat2(rootFd, path, flags, resolve);
            } catch (ErrnoException e) {
                boolean transient_ = e.is(Errno.EAGAIN) || e.is(Errno.EINTR);
                if (!transient_ || attempt >= MAX_ATTEMPTS) {
                    throw e;
                }
            }
        }
    }

    @Override
    public String name() {
        return "openat2";
    }
}
