package io.driveralias.agent.fs;

/**
 * open(2) and openat2(2) constants. Most are shared by every Linux architecture, but
 * O_DIRECTORY and O_NOFOLLOW differ between x86_64 and arm64, so they come from the running
 * architecture; any other architecture is refused at startup rather than guessed.
 */
public final class OpenFlags {

    public static final int O_RDONLY = 0;
    public static final int O_NOCTTY = 0400;
    public static final int O_NONBLOCK = 04000;
    public static final int O_CLOEXEC = 02000000;
    public static final int O_PATH = 010000000;
    public static final int O_DIRECTORY;
    public static final int O_NOFOLLOW;

    public static final int AT_FDCWD = -100;
    public static final int AT_SYMLINK_NOFOLLOW = 0x100;
    public static final int AT_REMOVEDIR = 0x200;
    public static final int AT_EMPTY_PATH = 0x1000;

    public static final long RESOLVE_NO_XDEV = 0x01;
    public static final long RESOLVE_NO_MAGICLINKS = 0x02;
    public static final long RESOLVE_IN_ROOT = 0x10;

    public static final int RENAME_NOREPLACE = 1;
    public static final int RENAME_EXCHANGE = 2;

    static {
        String arch = System.getProperty("os.arch");
        switch (arch) {
            case "amd64", "x86_64" -> {
                O_DIRECTORY = 0200000;
                O_NOFOLLOW = 0400000;
            }
            case "aarch64", "arm64" -> {
                O_DIRECTORY = 040000;
                O_NOFOLLOW = 0100000;
            }
            default -> throw new ExceptionInInitializerError("unsupported architecture " + arch
                    + ": the agent knows the open(2) flags of x86_64 and aarch64 only");
        }
    }

    private OpenFlags() {
    }
}
