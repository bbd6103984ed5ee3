package io.driveralias.agent.fs;

/**
 * The node's root filesystem, for the few host paths Docker reports (a bind mount's source).
 * Inside a pod the agent's own "/" is its image, so the host's is reached through the host's
 * init process ({@code <host-proc>/1/root}, which needs the host PID namespace and
 * CAP_SYS_PTRACE). Where that is refused, the agent's own root serves (the agent runs on the
 * host, or the paths are mounted at the same place). Paths resolve inside that root.
 */
public final class HostRoot {

    private final String hostProc;
    private final PathResolver resolver;
    private RootFs root;
    private String via = "";

    public HostRoot(String hostProc, PathResolver resolver) {
        this.hostProc = hostProc;
        this.resolver = resolver;
    }

    /** Opens a regular file of the host for bounded reads. */
    public ReadableFile openRegularFile(String hostPath) throws ErrnoException {
        return root().openRegularFile(hostPath);
    }

    /** The identity of what a host path leads to (a final symlink followed, inside the host's root). */
    public FileStat stat(String hostPath) throws ErrnoException {
        return root().stat(hostPath, true);
    }

    /** Opens a directory of the host for listing. */
    public Directory openDirectory(String hostPath) throws ErrnoException {
        return root().openDirectory(hostPath, false);
    }

    /** What the host's root is reached through, for messages. */
    public synchronized String describe() {
        return root == null ? hostProc + "/1/root (not opened yet)" : via;
    }

    private synchronized RootFs root() throws ErrnoException {
        if (root == null) {
            root = open();
        }
        return root;
    }

    private RootFs open() throws ErrnoException {
        try {
            RootFs opened = initsRoot(hostProc, resolver);
            via = hostProc + "/1/root";
            return opened;
        } catch (ErrnoException e) {
            via = "/ (the agent's own root: " + hostProc + "/1/root: " + e.getMessage() + ")";
            return RootFs.openHostDirectory("/", resolver);
        }
    }

    /** The host's root as above, opened for one use: the caller closes it. */
    public static RootFs openOnce(String hostProc, PathResolver resolver) throws ErrnoException {
        try {
            return initsRoot(hostProc, resolver);
        } catch (ErrnoException e) {
            return RootFs.openHostDirectory("/", resolver);
        }
    }

    private static RootFs initsRoot(String hostProc, PathResolver resolver) throws ErrnoException {
        return RootFs.adopt(Libc.openHost(hostProc + "/1/root", OpenFlags.O_PATH | OpenFlags.O_DIRECTORY), resolver);
    }
}
