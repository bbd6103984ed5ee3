package io.driveralias.agent.fs;

/**
 * A system call failed. Carries the errno so callers can map it to a failure reason
 * ({@code EROFS} -> read_only, {@code EXDEV} -> unsafe_path, ...). An answer of the kernel, not
 * a bug: most are expected (ENOENT for an alias not made yet, every container), each is handled
 * where it is caught and reported by its message, so none records a stack trace.
 */
public final class ErrnoException extends Exception {

    private final int errno;

    public ErrnoException(String operation, String path, int errno) {
        super(operation + (path == null ? "" : " " + path) + ": " + Errno.describe(errno), null, false, false);
        this.errno = errno;
    }

    public int errno() {
        return errno;
    }

    public boolean is(int code) {
        return errno == code;
    }
}
