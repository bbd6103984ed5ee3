package io.driveralias.agent.fs;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.regex.Pattern;

/**
 * {@link PathResolver} for kernels without openat2 (before 5.6; RHEL 7 and 8). It walks the
 * path one component at a time with {@code O_PATH|O_NOFOLLOW}, reads each symlink itself and
 * splices its text back into the path, so nothing is ever resolved by the kernel's rules
 * against the host root. It keeps the chain of directories it walked through, so {@code ..}
 * returns along that chain and never climbs above the root even if a directory is moved away.
 */
public final class WalkResolver implements PathResolver {

    /** Linux's own limit (MAXSYMLINKS), so both resolvers give up at the same depth. */
    private static final int MAX_SYMLINKS = 40;
    private static final int PATH_MAX = 4096;
    /** Magic links read as absolute paths or as {@code type:[id]}; plain procfs links are relative. */
    private static final Pattern MAGIC_TEXT = Pattern.compile("^(/.*|[a-z_ -]+:\\[?.*)$");

    @Override
    public int open(int rootFd, String path, int flags, boolean noXdev) throws ErrnoException {
        PathResolver.checkFlags(flags);
        if (path.length() >= PATH_MAX) {
            throw new ErrnoException("walk", path, Errno.ENAMETOOLONG);
        }
        long rootMount = noXdev ? MountIds.of(rootFd) : 0;
        Deque<String> remaining = new ArrayDeque<>();
        push(remaining, path);
        Deque<Integer> chain = new ArrayDeque<>();
        int symlinks = 0;
        try {
            while (true) {
                String name = remaining.pollFirst();
                if (name == null) {
                    return Libc.openat(current(chain, rootFd), ".", flags);
                }
                if (name.isEmpty() || name.equals(".")) {
                    continue;
                }
                if (name.equals("..")) {
                    if (!chain.isEmpty()) {
                        Libc.close(chain.pop());
                    }
                    continue;
                }
                boolean last = remaining.stream().allMatch(n -> n.isEmpty() || n.equals("."));
                int fd = Libc.openat(current(chain, rootFd), name, OpenFlags.O_PATH | OpenFlags.O_NOFOLLOW);
                FileStat stat;
                try {
                    stat = Libc.statx(fd, "", false);
                    if (noXdev && MountIds.of(fd, stat) != rootMount) {
                        throw new ErrnoException("walk", name, Errno.EXDEV);
                    }
                } catch (ErrnoException e) {
                    Libc.close(fd);
                    throw e;
                }
                if (stat.isSymlink() && !(last && (flags & OpenFlags.O_NOFOLLOW) != 0)) {
                    String target = readLinkChecked(fd, name, ++symlinks);
                    if (target.startsWith("/")) {
                        closeAll(chain);
                    }
                    push(remaining, target);
                    continue;
                }
                if (!last) {
                    if (!stat.isDirectory()) {
                        Libc.close(fd);
                        throw new ErrnoException("walk", name, Errno.ENOTDIR);
                    }
                    chain.push(fd);
                    continue;
                }
                return finish(current(chain, rootFd), name, fd, stat, flags);
            }
        } finally {
            closeAll(chain);
        }
    }

    /** The last component: hand back the O_PATH fd, or reopen the same inode with the caller's flags. */
    private static int finish(int dirFd, String name, int pathFd, FileStat stat, int flags) throws ErrnoException {
        try {
            if ((flags & OpenFlags.O_DIRECTORY) != 0 && !stat.isDirectory()) {
                throw new ErrnoException("walk", name, Errno.ENOTDIR);
            }
            if ((flags & OpenFlags.O_PATH) != 0) {
                int fd = pathFd;
                pathFd = -1;
                return fd;
            }
            int fd = Libc.openat(dirFd, name, flags | OpenFlags.O_NOFOLLOW);
            if (!Libc.statx(fd, "", false).sameFile(stat)) {
                // The name was swapped between the two opens: report it as the race it is.
                Libc.close(fd);
                throw new ErrnoException("walk", name, Errno.EAGAIN);
            }
            return fd;
        } finally {
            Libc.close(pathFd);
        }
    }

    private static String readLinkChecked(int linkFd, String name, int symlinks) throws ErrnoException {
        try {
            if (symlinks > MAX_SYMLINKS) {
                throw new ErrnoException("walk", name, Errno.ELOOP);
            }
            String target = Libc.readlinkat(linkFd, "");
            if (Libc.filesystemType(linkFd) == Libc.PROC_SUPER_MAGIC && MAGIC_TEXT.matcher(target).matches()) {
                throw new ErrnoException("walk", name + " (magic link)", Errno.ELOOP);
            }
            if (target.isEmpty()) {
                throw new ErrnoException("walk", name, Errno.ENOENT);
            }
            return target;
        } finally {
            Libc.close(linkFd);
        }
    }

    private static int current(Deque<Integer> chain, int rootFd) {
        return chain.isEmpty() ? rootFd : chain.peek();
    }

    private static void push(Deque<String> remaining, String path) {
        // At most MAX_SYMLINKS splices of at most PATH_MAX each: the deque stays bounded.
        String[] parts = path.split("/", -1);
        for (int i = parts.length - 1; i >= 0; i--) {
            remaining.addFirst(parts[i]);
        }
    }

    private static void closeAll(Deque<Integer> chain) {
        while (!chain.isEmpty()) {
            Libc.close(chain.pop());
        }
    }

    @Override
    public String name() {
        return "walk";
    }
}
