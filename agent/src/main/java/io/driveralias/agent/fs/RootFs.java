package io.driveralias.agent.fs;

import java.util.concurrent.ThreadLocalRandom;

/**
 * An untrusted root filesystem (a container's {@code /proc/<pid>/root}, an overlay directory,
 * an unpacked image) held by a directory fd. Every path below it is resolved by a
 * {@link PathResolver}; nothing here passes a container path to the host's lookup.
 */
public final class RootFs implements AutoCloseable {

    /** The largest file the agent will open for reading; a real driver library is far smaller. */
    public static final long MAX_READ_SIZE = 1L << 30;

    private final int rootFd;
    private final PathResolver resolver;

    private RootFs(int rootFd, PathResolver resolver) {
        this.rootFd = rootFd;
        this.resolver = resolver;
    }

    /** A host directory the operator named (or Docker reported): opened by host rules, once. */
    public static RootFs openHostDirectory(String hostPath, PathResolver resolver) throws ErrnoException {
        return new RootFs(Libc.openHost(hostPath, OpenFlags.O_PATH | OpenFlags.O_DIRECTORY), resolver);
    }

    /** Takes ownership of an fd already open on the root directory. */
    public static RootFs adopt(int rootFd, PathResolver resolver) {
        return new RootFs(rootFd, resolver);
    }

    public PathResolver resolver() {
        return resolver;
    }

    /**
     * Opens a directory inside the root. With {@code forWriting} the path may not cross any
     * mount point, so a host directory bind-mounted into the container is refused (EXDEV).
     */
    public Directory openDirectory(String path, boolean forWriting) throws ErrnoException {
        int fd = resolver.open(rootFd, path, OpenFlags.O_RDONLY | OpenFlags.O_DIRECTORY, forWriting);
        try {
            return new Directory(fd, path, Libc.statx(fd, "", false));
        } catch (ErrnoException e) {
            Libc.close(fd);
            throw e;
        }
    }

    /** stat of a path inside the root; {@code follow} resolves a final symlink inside the root. */
    public FileStat stat(String path, boolean follow) throws ErrnoException {
        int fd = resolver.open(rootFd, path, OpenFlags.O_PATH | (follow ? 0 : OpenFlags.O_NOFOLLOW), false);
        try {
            return Libc.statx(fd, "", false);
        } finally {
            Libc.close(fd);
        }
    }

    /** Opens a regular file inside the root for bounded reads (symlinks followed inside the root). */
    public ReadableFile openRegularFile(String path) throws ErrnoException {
        return ReadableFile.fromPathFd(resolver.open(rootFd, path, OpenFlags.O_PATH, false), path);
    }

    @Override
    public void close() {
        Libc.close(rootFd);
    }

    private static final String TEMPORARY_MARK = ".driver-alias-";
    private static final java.util.regex.Pattern RANDOM = java.util.regex.Pattern.compile("[0-9a-f]{1,16}");
    private static final java.util.regex.Pattern TEMPORARY =
            java.util.regex.Pattern.compile("\\.(?:.*\\.)?driver-alias-[0-9a-f]{1,16}");

    /** A name {@link #temporaryName} makes: a leftover of an agent killed between link and rename. */
    public static boolean isTemporaryName(String name) {
        return TEMPORARY.matcher(name).matches();
    }

    /** Exactly a name {@link #temporaryName} makes for {@code name}. */
    public static boolean isTemporaryNameOf(String candidate, String name) {
        int cut = candidate.lastIndexOf(TEMPORARY_MARK);
        if (cut < 0 || !RANDOM.matcher(candidate.substring(cut + TEMPORARY_MARK.length())).matches()) {
            return false;
        }
        String head = candidate.substring(0, cut);
        return head.equals("." + name) || (head.isEmpty() && ("." + name + candidate).length() > 255);
    }

    /** A name for a temporary link that no container can predict. */
    public static String temporaryName(String alias) {
        String suffix = TEMPORARY_MARK + Long.toHexString(ThreadLocalRandom.current().nextLong());
        String name = "." + alias + suffix;
        return name.length() <= 255 ? name : suffix;
    }
}
