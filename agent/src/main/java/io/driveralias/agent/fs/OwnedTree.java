package io.driveralias.agent.fs;

/**
 * Removes a directory tree the agent made, in a directory others can write to (a shared
 * {@code /tmp}), without ever deleting by path: every step is {@code unlinkat} under the fd of
 * the directory that holds the name, and a directory is entered with {@code O_NOFOLLOW}, only
 * when {@code uid} owns it and only if the directory opened is the one just checked. A user who
 * swaps a subdirectory for a symlink at any moment makes the removal leave that name, never
 * leave the tree: {@code unlinkat} removes a symlink itself, never what it points to.
 */
public final class OwnedTree {

    /** The agent's own trees are a few levels deep; a deeper one is not its own. */
    private static final int MAX_DEPTH = 16;

    private OwnedTree() {
    }

    /**
     * Removes {@code name} of {@code parent} and everything under it, if {@code name} is a
     * directory owned by {@code uid}. True if it is gone; false if it is not such a directory or
     * something in it could not be removed (a directory owned by someone else stays, and so do
     * the directories that hold it).
     */
    public static boolean remove(Directory parent, String name, int uid) {
        return removeDirectory(parent, name, uid, 0);
    }

    private static boolean removeDirectory(Directory parent, String name, int uid, int depth) {
        try {
            FileStat checked = parent.statEntry(name);
            if (!checked.isDirectory() || checked.uid() != uid || depth > MAX_DEPTH) {
                return false;
            }
            boolean emptied = true;
            // O_NOFOLLOW: a symlink swapped in since the stat fails the open (ELOOP or ENOTDIR).
            try (Directory dir = parent.subdirectory(name)) {
                if (!dir.stat().sameFile(checked) || dir.stat().uid() != uid) {
                    return false; // another directory swapped in
                }
                for (Libc.RawDirent entry : dir.names()) {
                    emptied &= removeEntry(dir, entry.name(), uid, depth + 1);
                }
            }
            if (emptied) {
                // unlinkat(AT_REMOVEDIR) of the name: anything else there now fails (ENOTDIR, ENOTEMPTY).
                parent.remove(name, true);
            }
            return emptied;
        } catch (ErrnoException e) {
            return false; // gone, swapped or refused: left alone
        }
    }

    private static boolean removeEntry(Directory dir, String name, int uid, int depth) {
        try {
            if (dir.statEntry(name).isDirectory()) {
                return removeDirectory(dir, name, uid, depth);
            }
            dir.remove(name, false); // a file or a symlink: the name itself goes, EISDIR if swapped
            return true;
        } catch (ErrnoException e) {
            return e.is(Errno.ENOENT);
        }
    }
}
