package io.driveralias.agent.live;

import io.driveralias.agent.fs.Errno;
import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.fs.KernelFiles;
import io.driveralias.agent.fs.Libc;
import io.driveralias.agent.fs.ProcessStartTime;
import io.driveralias.agent.fs.RootFs;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;

/**
 * A container's root filesystem, held open together with a handle on its init process, so
 * that "is it still the same, living container?" can be asked after the work is done.
 *
 * @param via            "proc" ({@code /proc/<pid>/root}) or "merged" (the overlay's merged dir)
 * @param injectedFiles  container paths of driver files the runtime mounted in
 * @param hostSources    for the merged-dir view, the host source of each injected file (its
 *                       placeholder there is not the file)
 * @param processStartedAt when its process started, as the kernel says; empty for the merged-dir view
 */
public record OpenedContainer(RootFs root, String via, List<String> injectedFiles, Map<String, String> hostSources,
                              int procFd, int pidFd, Liveness fallback, Optional<Instant> processStartedAt)
        implements AutoCloseable {

    /** How to tell, without a process handle, that the container still runs. */
    @FunctionalInterface
    public interface Liveness {
        void requireAlive() throws ErrnoException;
    }

    /** Throws ESRCH if the process died (or, with a pid handle, was replaced) since opening. */
    public void requireAlive() throws ErrnoException {
        if (fallback != null) {
            fallback.requireAlive();
        } else if (pidFd >= 0) {
            try {
                Libc.pidfdSignal0(pidFd);
            } catch (ErrnoException e) {
                // As with kill(2): EPERM means the process exists but may not be signalled
                // by us (another user, and the agent holds no CAP_KILL). Only ESRCH is gone.
                if (!e.is(Errno.EPERM)) {
                    throw e;
                }
            }
        } else if (procFd >= 0) {
            try {
                Libc.statx(procFd, "stat", false);
            } catch (ErrnoException e) {
                throw new ErrnoException("process", "gone", Errno.ESRCH);
            }
        }
    }

    /**
     * {@link #requireAlive}, and the process not on its way out: an exiting process has dropped
     * its mount namespace before it is reaped (signal 0 still reaches a zombie), and its root then
     * shows the image's empty placeholders where the runtime's bind mounts were. A look at what
     * its files are must end with this check, not with {@link #requireAlive} alone.
     */
    public void requireMountsLive() throws ErrnoException {
        requireAlive();
        if (procFd >= 0) {
            if (ProcessStartTime.isExiting(stat())) {
                throw new ErrnoException("process", "exiting", Errno.ESRCH);
            }
        }
    }

    /**
     * Whether the container's process is still its runtime's init (runc's, named
     * {@code runc:[2:INIT]} until it runs the container's program): a process that has not begun
     * the container's program. False when that cannot be told (no process handle, another runtime).
     */
    public boolean stillInRuntimeInit() {
        if (procFd < 0) {
            return false;
        }
        try {
            return ProcessStartTime.isRuntimeInit(stat());
        } catch (ErrnoException e) {
            return false;
        }
    }

    /** Its process's {@code stat} line, read through the handle held since opening. */
    private String stat() throws ErrnoException {
        return new String(KernelFiles.read(procFd, "stat", 4096), StandardCharsets.ISO_8859_1);
    }

    @Override
    public void close() {
        root.close();
        Libc.close(procFd);
        Libc.close(pidFd);
    }
}
