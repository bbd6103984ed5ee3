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

    public HostRoot(String hostProc, PathResolver resolver) {
        this.hostProc = hostProc;
        this.resolver = resolver;
    }

    /** Opens a regular file of the host for bounded reads. */
    public synchronized ReadableFile openRegularFile(String hostPath) throws ErrnoException {
        if (root == null) {
            root = open();
        }
        return root.openRegularFile(hostPath);
    }

    private RootFs open() throws ErrnoException {
        try {
            return RootFs.adopt(Libc.openHost(hostProc + "/1/root", OpenFlags.O_PATH | OpenFlags.O_DIRECTORY), resolver);
        } catch (ErrnoException e) {
            return RootFs.openHostDirectory("/", resolver);
        }
    }
}
