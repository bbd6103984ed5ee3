package io.driveralias.agent.fs;

import java.util.Optional;
import org.slf4j.LoggerFactory;

/**
 * Opens a path inside an untrusted root directory by the root's rules, never the host's:
 * absolute symlinks and {@code ..} stay inside the root, magic links ({@code /proc/<pid>/root},
 * {@code /proc/<pid>/fd/N}) are refused with ELOOP, and with {@code noXdev} any mount point
 * on the way (a bind mount from the host, most importantly) is refused with EXDEV.
 *
 * <p>The last component is followed unless {@code flags} holds O_NOFOLLOW. Only O_PATH or
 * O_DIRECTORY opens are allowed: a regular file is opened for reading by reopening an O_PATH
 * fd after fstat showed it is safe (see {@link RootFs}), so a FIFO is never opened.
 */
public interface PathResolver {

    int open(int rootFd, String path, int flags, boolean noXdev) throws ErrnoException;

    /** "openat2" or "walk", for logs and tests. */
    String name();

    /**
     * openat2 where the kernel has it (5.6+) and the seccomp profile lets it through, probed
     * once here; else the walk, said once at INFO. {@code forceWalk} exists so that both are
     * tested on the same machine.
     */
    static PathResolver detect(boolean forceWalk) {
        if (forceWalk) {
            return new WalkResolver();
        }
        Optional<String> refused = Openat2Resolver.whyUnavailable();
        if (refused.isEmpty()) {
            return new Openat2Resolver();
        }
        LoggerFactory.getLogger(PathResolver.class).info("openat2 answered {} (a kernel before 5.6, or a"
                + " seccomp profile without it): container paths are resolved by the O_NOFOLLOW walk", refused.get());
        return new WalkResolver();
    }

    static void checkFlags(int flags) {
        if ((flags & (OpenFlags.O_PATH | OpenFlags.O_DIRECTORY)) == 0) {
            throw new IllegalArgumentException("resolvers open with O_PATH or O_DIRECTORY only");
        }
    }
}
