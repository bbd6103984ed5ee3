package io.driveralias.agent.fs;

/**
 * The parts of statx(2) the agent uses. {@code mountId} is 0 where the kernel does not report
 * it (before 5.8); {@code dev} packs major and minor so that two stats can be compared.
 */
public record FileStat(int mode, int uid, int gid, long inode, long size, long dev, long mountId,
                       long mtimeNanos, long ctimeNanos, long rdev) {

    private static final int S_IFMT = 0170000;
    private static final int S_IFREG = 0100000;
    private static final int S_IFDIR = 0040000;
    private static final int S_IFLNK = 0120000;
    private static final int S_IFCHR = 0020000;

    public boolean isRegularFile() {
        return (mode & S_IFMT) == S_IFREG;
    }

    public boolean isDirectory() {
        return (mode & S_IFMT) == S_IFDIR;
    }

    public boolean isSymlink() {
        return (mode & S_IFMT) == S_IFLNK;
    }

    /**
     * An overlayfs whiteout: a character device with device number 0:0, which hides the same
     * name in the layers below.
     */
    public boolean isWhiteout() {
        return (mode & S_IFMT) == S_IFCHR && rdev == 0;
    }

    public int permissions() {
        return mode & 07777;
    }

    /** Same inode on the same device: the identity that survives renames and reopening. */
    public boolean sameFile(FileStat other) {
        return inode == other.inode && dev == other.dev;
    }
}
