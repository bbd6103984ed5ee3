package io.driveralias.agent.fs;

import io.driveralias.agent.core.DirEntry;
import io.driveralias.agent.core.DirectoryListing;
import java.util.List;
import java.util.Optional;

/**
 * An open directory inside a {@link RootFs}. Every operation names a single entry of this
 * directory (no slashes), so no path is resolved past the fd.
 */
public final class Directory implements AutoCloseable {

    /** A hostile image can put millions of names in a library directory; past this, give up. */
    public static final int MAX_ENTRIES = 200_000;
    /** Leftover temporaries removed in one call; an agent leaves at most one per kill. */
    private static final int MAX_LEFTOVERS = 64;

    private final int fd;
    private final String path;
    private final FileStat stat;

    Directory(int fd, String path, FileStat stat) {
        this.fd = fd;
        this.path = path;
        this.stat = stat;
    }

    /** A host directory the agent chose itself (its own temporary directory), opened by host rules. */
    public static Directory openHost(String hostPath) throws ErrnoException {
        int fd = Libc.openHost(hostPath, OpenFlags.O_RDONLY | OpenFlags.O_DIRECTORY);
        try {
            return new Directory(fd, hostPath, Libc.statx(fd, "", false));
        } catch (ErrnoException e) {
            Libc.close(fd);
            throw e;
        }
    }

    public String path() {
        return path;
    }

    public FileStat stat() {
        return stat;
    }

    public List<Libc.RawDirent> names() throws ErrnoException {
        return NativeIo.readDirectory(fd, MAX_ENTRIES);
    }

    /** What is at {@code name}, without following it; empty when nothing is. */
    public Optional<DirEntry> entry(String name) throws ErrnoException {
        requirePlain(name);
        FileStat s;
        try {
            s = Libc.statx(fd, name, false);
        } catch (ErrnoException e) {
            if (e.is(Errno.ENOENT)) {
                return Optional.empty();
            }
            throw e;
        }
        if (s.isSymlink()) {
            return Optional.of(DirEntry.symlink(name, Libc.readlinkat(fd, name)));
        }
        if (s.isRegularFile()) {
            return Optional.of(DirEntry.file(name));
        }
        return Optional.of(s.isDirectory() ? DirEntry.directory(name) : DirEntry.other(name));
    }

    /**
     * This directory as the planner sees it. The planner asks about a handful of names, so
     * entries are looked up on demand; an error on one name makes the planner see a special
     * file there, which it never touches.
     */
    public DirectoryListing listing() {
        return name -> {
            try {
                return entry(name);
            } catch (ErrnoException e) {
                return Optional.of(DirEntry.other(name));
            }
        };
    }

    /** Opens a regular file of this directory for reading; a symlink at that name is refused. */
    public ReadableFile openFile(String name) throws ErrnoException {
        requirePlain(name);
        return ReadableFile.fromPathFd(Libc.openat(fd, name, OpenFlags.O_PATH | OpenFlags.O_NOFOLLOW), path + "/" + name);
    }

    public FileStat statEntry(String name) throws ErrnoException {
        requirePlain(name);
        return Libc.statx(fd, name, false);
    }

    /**
     * Makes {@code name} a symlink to {@code target}, atomically: the link is made under a
     * random name and renamed over {@code name}. With {@code replace} false nothing may be at
     * {@code name} (RENAME_NOREPLACE); with {@code replace} true only a symlink may be there,
     * checked after an atomic exchange, so a file or directory that appeared in the meantime
     * is put back untouched. The temporary is removed on every failure.
     */
    public void link(String name, String target, boolean replace) throws ErrnoException {
        requirePlain(name);
        requirePlain(target);
        String temporary = RootFs.temporaryName(name);
        Libc.symlinkat(target, fd, temporary);
        boolean placed = false;
        try {
            if (replace) {
                exchangeOverSymlink(temporary, name);
            } else {
                renameNoReplaceChecked(temporary, name);
            }
            placed = true;
        } finally {
            if (!placed) {
                unlinkQuietly(temporary);
            }
        }
    }

    void renameNoReplaceChecked(String temporary, String name) throws ErrnoException {
        try {
            Libc.renameat2(fd, temporary, name, OpenFlags.RENAME_NOREPLACE);
        } catch (ErrnoException e) {
            if (!e.is(Errno.EINVAL) && !e.is(Errno.ENOSYS)) {
                throw e;
            }
            // A filesystem without RENAME_NOREPLACE: check, then plain rename (tiny window,
            // and the worst a racing container can do is lose its own file in its own root).
            if (entry(name).isPresent()) {
                throw new ErrnoException("link", name, Errno.EEXIST);
            }
            Libc.renameat2(fd, temporary, name, 0);
        }
    }

    private void exchangeOverSymlink(String temporary, String name) throws ErrnoException {
        try {
            Libc.renameat2(fd, temporary, name, OpenFlags.RENAME_EXCHANGE);
        } catch (ErrnoException e) {
            if (e.is(Errno.ENOENT)) {
                renameNoReplaceChecked(temporary, name);
                return;
            }
            if (!e.is(Errno.EINVAL) && !e.is(Errno.ENOSYS)) {
                throw e;
            }
            if (!Libc.statx(fd, name, false).isSymlink()) {
                throw new ErrnoException("link", name + " (no longer a symlink)", Errno.EEXIST);
            }
            Libc.renameat2(fd, temporary, name, 0);
            return;
        }
        // The old entry now sits at the temporary name.
        if (Libc.statx(fd, temporary, false).isSymlink()) {
            Libc.unlinkat(fd, temporary, 0);
            return;
        }
        Libc.renameat2(fd, temporary, name, OpenFlags.RENAME_EXCHANGE);
        throw new ErrnoException("link", name + " (no longer a symlink)", Errno.EEXIST);
    }

    /**
     * Starts a new regular file that will take {@code name}: written under a random temporary
     * name, then put in place (or removed when closed unplaced).
     */
    public NewFile newFile(String name) throws ErrnoException {
        requirePlain(name);
        return new NewFile(this, name);
    }

    /**
     * Removes the temporary files {@link NewFile} makes for {@code name} that an agent killed
     * while writing left behind: only names of exactly that pattern, only regular files, by
     * this directory's fd (unlinkat never follows a link). The directory is streamed, not
     * listed: a huge one costs time, not memory. Returns how many were removed.
     */
    public int removeTemporaryFiles(String name) throws ErrnoException {
        requirePlain(name);
        List<String> found = new java.util.ArrayList<>();
        NativeIo.forEachEntry(fd, MAX_ENTRIES, (entry, type) -> {
            if (found.size() < MAX_LEFTOVERS && (type == Libc.RawDirent.DT_REG || type == Libc.RawDirent.DT_UNKNOWN)
                    && RootFs.isTemporaryNameOf(entry, name)) {
                found.add(entry);
            }
        });
        int removed = 0;
        for (String leftover : found) {
            try {
                if (Libc.statx(fd, leftover, false).isRegularFile()) {
                    Libc.unlinkat(fd, leftover, 0);
                    removed++;
                }
            } catch (ErrnoException e) {
                // Gone meanwhile, or not ours to remove: litter, not harm; the next pass tries again.
            }
        }
        return removed;
    }

    /** An extended attribute of this directory, e.g. overlayfs' opaque marker; empty if absent. */
    public Optional<byte[]> xattr(String name) throws ErrnoException {
        return Libc.fgetxattr(fd, name);
    }

    /** Opens the subdirectory {@code name}, never following a symlink there. */
    public Directory subdirectory(String name) throws ErrnoException {
        requirePlain(name);
        int sub = Libc.openat(fd, name, OpenFlags.O_RDONLY | OpenFlags.O_DIRECTORY | OpenFlags.O_NOFOLLOW);
        try {
            return new Directory(sub, path.endsWith("/") ? path + name : path + "/" + name, Libc.statx(sub, "", false));
        } catch (ErrnoException e) {
            Libc.close(sub);
            throw e;
        }
    }

    /**
     * Creates the subdirectory {@code name} with exactly this owner and mode (no umask), as a
     * copy of the directory it will stand over in a lower layer.
     */
    public Directory makeDirectory(String name, int uid, int gid, int mode) throws ErrnoException {
        requirePlain(name);
        LibcNewEntries.mkdirat(fd, name, 0700);
        Directory created = subdirectory(name);
        try {
            // The mode first, while the directory is still the agent's own: no CAP_FOWNER (mode
            // of another's file) or CAP_FSETID (setgid for a foreign group) is needed. A chown
            // by root keeps a directory's setgid bit.
            LibcNewEntries.fchmod(created.fd, mode & 07777);
            LibcNewEntries.fchownat(fd, name, uid, gid);
            return created;
        } catch (ErrnoException e) {
            created.close();
            throw e;
        }
    }

    /** Renames an entry of this directory; fails with EEXIST if {@code to} exists. */
    public void renameNoReplace(String from, String to) throws ErrnoException {
        requirePlain(from);
        requirePlain(to);
        renameNoReplaceChecked(from, to);
    }

    /** Removes a name of this directory: an empty directory, or anything else. */
    public void remove(String name, boolean directory) throws ErrnoException {
        requirePlain(name);
        Libc.unlinkat(fd, name, directory ? OpenFlags.AT_REMOVEDIR : 0);
    }

    /** The text of the symlink at {@code name}. */
    public String readLink(String name) throws ErrnoException {
        requirePlain(name);
        return Libc.readlinkat(fd, name);
    }

    int fd() {
        return fd;
    }

    void unlinkQuietly(String name) {
        try {
            Libc.unlinkat(fd, name, 0);
        } catch (ErrnoException ignored) {
            // Already gone, or the directory went read-only: nothing more to do.
        }
    }

    private static void requirePlain(String name) throws ErrnoException {
        if (name.isEmpty() || name.indexOf('/') >= 0 || name.equals(".") || name.equals("..")) {
            throw new ErrnoException("name", name, Errno.EINVAL);
        }
    }

    @Override
    public void close() {
        Libc.close(fd);
    }
}
