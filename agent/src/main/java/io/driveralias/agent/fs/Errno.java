package io.driveralias.agent.fs;

/** The errno values the agent reacts to. Identical on x86_64 and aarch64 (asm-generic). */
public final class Errno {

    public static final int EPERM = 1;
    public static final int ENOENT = 2;
    public static final int ESRCH = 3;
    public static final int EINTR = 4;
    public static final int EIO = 5;
    public static final int EBADF = 9;
    public static final int EAGAIN = 11;
    public static final int ENOMEM = 12;
    public static final int EACCES = 13;
    public static final int EBUSY = 16;
    public static final int EEXIST = 17;
    public static final int EXDEV = 18;
    public static final int ENOTDIR = 20;
    public static final int EISDIR = 21;
    public static final int EINVAL = 22;
    public static final int EFBIG = 27;
    public static final int ENOSPC = 28;
    public static final int EROFS = 30;
    public static final int ENAMETOOLONG = 36;
    public static final int ENOSYS = 38;
    public static final int ELOOP = 40;
    public static final int ENODATA = 61;
    public static final int EOPNOTSUPP = 95;

    private Errno() {
    }

    public static String name(int errno) {
        return switch (errno) {
            case EPERM -> "EPERM";
            case ENOENT -> "ENOENT";
            case ESRCH -> "ESRCH";
            case EINTR -> "EINTR";
            case EIO -> "EIO";
            case EBADF -> "EBADF";
            case EAGAIN -> "EAGAIN";
            case ENOMEM -> "ENOMEM";
            case EACCES -> "EACCES";
            case EBUSY -> "EBUSY";
            case EEXIST -> "EEXIST";
            case EXDEV -> "EXDEV";
            case ENOTDIR -> "ENOTDIR";
            case EISDIR -> "EISDIR";
            case EINVAL -> "EINVAL";
            case EFBIG -> "EFBIG";
            case ENOSPC -> "ENOSPC";
            case EROFS -> "EROFS";
            case ENAMETOOLONG -> "ENAMETOOLONG";
            case ENOSYS -> "ENOSYS";
            case ELOOP -> "ELOOP";
            case ENODATA -> "ENODATA";
            case EOPNOTSUPP -> "EOPNOTSUPP";
            default -> "errno " + errno;
        };
    }

    static String describe(int errno) {
        String what = switch (errno) {
            case ENOENT -> "no such file or directory";
            case ESRCH -> "no such process";
            case EACCES, EPERM -> "permission denied";
            case EXDEV -> "crosses a mount point (refused)";
            case ELOOP -> "symlink loop or forbidden link (refused)";
            case ENOTDIR -> "not a directory";
            case EROFS -> "read-only file system";
            case ENOSYS -> "not supported by this kernel";
            case EFBIG -> "too large";
            default -> "";
        };
        return what.isEmpty() ? name(errno) : name(errno) + " (" + what + ")";
    }
}
