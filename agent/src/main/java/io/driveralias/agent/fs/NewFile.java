package io.driveralias.agent.fs;

import io.driveralias.agent.elf.ByteSource;
import java.io.IOException;
import java.util.Arrays;

/**
 * A regular file being written in a {@link Directory} under a random temporary name
 * ({@code O_EXCL|O_NOFOLLOW}, mode 0600 while it is written), then put in place under its real
 * name, atomically, with its final mode and owner, or removed: {@link #close} removes it unless
 * it was placed. What was written can be read back before it is placed.
 */
public final class NewFile implements ByteSource, AutoCloseable {

    private static final int COMPARE_CHUNK = 4096;

    private final Directory dir;
    private final String name;
    private final String temporary;
    private int fd;
    private long size;
    /** Whether the temporary name holds this file, to be removed on close. */
    private boolean removeOnClose = true;

    NewFile(Directory dir, String name) throws ErrnoException {
        this.dir = dir;
        this.name = name;
        this.temporary = RootFs.temporaryName(name);
        this.fd = LibcNewEntries.createFile(dir.fd(), temporary, 0600);
    }

    /** Appends {@code bytes[0..length)}. */
    public void write(byte[] bytes, int length) throws ErrnoException {
        NativeIo.writeFully(fd, bytes, length);
        size += length;
    }

    @Override
    public long size() {
        return size;
    }

    @Override
    public void readFully(long position, byte[] dst, int length) throws IOException {
        ReadableFile.readFully(fd, size, position, dst, length);
    }

    /** Mode while the file is still the agent's own (no CAP_FOWNER needed), then owner; then fsync. */
    private void seal(int mode, int uid, int gid) throws ErrnoException {
        LibcNewEntries.fchmod(fd, mode & 0777);
        LibcNewEntries.fchown(fd, uid, gid);
        LibcNewEntries.fsync(fd);
        Libc.close(fd);
        fd = -1;
    }

    /** Puts the file at its name, where nothing may be (RENAME_NOREPLACE): EEXIST if something is. */
    public void create(int mode, int uid, int gid) throws ErrnoException {
        seal(mode, uid, gid);
        dir.renameNoReplaceChecked(temporary, name);
        removeOnClose = false;
    }

    /**
     * Puts the file at its name in place of the regular file {@code expected}, with
     * RENAME_EXCHANGE. If what was swapped out is no longer {@code expected} (same inode, size
     * and mtime), someone changed the file meanwhile: the swap is undone and this fails with
     * EEXIST rather than lose their version. One exception: overlayfs gives a lower-layer file
     * with several links a new inode number when the rename copies it up, so a file with the
     * same size and mtime whose bytes are still those of {@code original} (the file read before,
     * through a descriptor opened before the copy-up) counts as unchanged. The old file's name
     * here is removed; another hard link to it keeps the old content.
     */
    public void replace(FileStat expected, ByteSource original, int mode, int uid, int gid) throws ErrnoException {
        seal(mode, uid, gid);
        int dirFd = dir.fd();
        try {
            Libc.renameat2(dirFd, temporary, name, OpenFlags.RENAME_EXCHANGE);
        } catch (ErrnoException e) {
            if (!e.is(Errno.EINVAL) && !e.is(Errno.ENOSYS)) {
                throw e;
            }
            // No RENAME_EXCHANGE on this filesystem: check, then a plain rename (a small
            // window in which a container can only lose its own concurrent change).
            if (!unchanged(Libc.statx(dirFd, name, false), expected)) {
                throw new ErrnoException("replace", name + " (changed meanwhile)", Errno.EEXIST);
            }
            Libc.renameat2(dirFd, temporary, name, 0);
            removeOnClose = false;
            return;
        }
        // The old file now sits at the temporary name: never removed unless it is the expected one.
        removeOnClose = false;
        FileStat old = Libc.statx(dirFd, temporary, false);
        if (!unchanged(old, expected) && !copiedUp(old, expected, original)) {
            // Someone else's version: put it back. Only once that worked is the temporary ours
            // again; if it failed, their file stays at the temporary name rather than be lost.
            Libc.renameat2(dirFd, temporary, name, OpenFlags.RENAME_EXCHANGE);
            removeOnClose = true;
            throw new ErrnoException("replace", name + " (changed meanwhile)", Errno.EEXIST);
        }
        dir.unlinkQuietly(temporary);
    }

    private static boolean unchanged(FileStat now, FileStat expected) {
        return now.isRegularFile() && now.sameFile(expected) && now.size() == expected.size()
                && now.mtimeNanos() == expected.mtimeNanos();
    }

    /**
     * Another inode with the expected size, mtime and bytes: the same file, copied up by
     * overlayfs. Anything that cannot be read to the end is not.
     */
    private boolean copiedUp(FileStat now, FileStat expected, ByteSource original) {
        if (original == null || !now.isRegularFile() || now.size() != expected.size()
                || now.mtimeNanos() != expected.mtimeNanos() || original.size() != expected.size()) {
            return false;
        }
        try (ReadableFile swapped = dir.openFile(temporary)) {
            if (!swapped.stat().sameFile(now) || swapped.size() != now.size()) {
                return false;
            }
            byte[] a = new byte[COMPARE_CHUNK];
            byte[] b = new byte[COMPARE_CHUNK];
            for (long at = 0; at < now.size(); at += COMPARE_CHUNK) {
                int n = (int) Math.min(COMPARE_CHUNK, now.size() - at);
                swapped.readFully(at, a, n);
                original.readFully(at, b, n);
                if (!Arrays.equals(a, 0, n, b, 0, n)) {
                    return false;
                }
            }
            return true;
        } catch (ErrnoException | IOException e) {
            return false;
        }
    }

    /** Closes the file and, unless it was placed, removes it. */
    @Override
    public void close() {
        Libc.close(fd);
        fd = -1;
        if (removeOnClose) {
            dir.unlinkQuietly(temporary);
        }
    }
}
