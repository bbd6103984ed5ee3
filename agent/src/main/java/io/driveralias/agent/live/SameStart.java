package io.driveralias.agent.live;

import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.fs.Errno;
import io.driveralias.agent.fs.ErrnoException;
import java.time.Duration;

/**
 * Whether a container still runs the start that was examined: what tells a failed repair from a
 * container that exited under it.
 */
final class SameStart {

    /** How long a failed repair waits to tell an exiting process from a living one. */
    private static final Duration EXIT_SETTLE = Duration.ofMillis(250);
    /** Two datings of one start: Docker's and the kernel's are at most some 100 ms apart. */
    private static final Duration SAME_START = Duration.ofSeconds(1);

    private final ContainerRuntime runtime;
    private final ContainerRoots roots;

    SameStart(ContainerRuntime runtime, ContainerRoots roots) {
        this.runtime = runtime;
        this.roots = roots;
    }

    /** The container still runs the process that was examined: same pid, same start. */
    void requireSameStart(ContainerInfo examined) throws ErrnoException {
        try {
            ContainerInfo now = runtime.describe(examined.id());
            if (now.running() && now.pid() == examined.pid() && sameInstant(now, examined)) {
                return;
            }
        } catch (ContainerRuntimeException.NoSuchContainer e) {
            // Removed: gone.
        } catch (ContainerRuntimeException e) {
            throw new ErrnoException(runtime.name(), examined.id() + ": " + e.getMessage(), Errno.EIO);
        }
        throw new ErrnoException("container", examined.id() + " (exited)", Errno.ESRCH);
    }

    /**
     * The same start, though the two descriptions may date it from different sources: Docker's
     * {@code StartedAt} (tens of ms off the process's) where the kernel's record of the process
     * could not be read, the kernel's elsewhere. Its pid already tells a restart (a new process);
     * the instant only guards against a pid used again, which takes far longer than this.
     */
    private static boolean sameInstant(ContainerInfo a, ContainerInfo b) {
        if (a.startedAt().isEmpty() || b.startedAt().isEmpty()) {
            return a.startedAt().equals(b.startedAt());
        }
        return Duration.between(a.startedAt().get(), b.startedAt().get()).abs().compareTo(SAME_START) <= 0;
    }

    /**
     * False when the examined start has ended: its process is a zombie, or Docker says the
     * start is over. A process in the middle of exiting already fails the repair (its mount
     * table reads EINVAL) but is neither a zombie nor exited in Docker's eyes yet: it gets a
     * moment. A process this /proc does not show (no host PID namespace) is Docker's to judge.
     * A Docker error keeps the failure.
     */
    boolean stillSameStart(ContainerInfo examined) {
        long deadline = System.nanoTime() + EXIT_SETTLE.toNanos();
        while (true) {
            ContainerRoots.ProcessState state = roots.processState(examined.pid());
            if (state == ContainerRoots.ProcessState.ENDED) {
                return false;
            }
            if (state == ContainerRoots.ProcessState.NOT_VISIBLE || System.nanoTime() > deadline) {
                try {
                    requireSameStart(examined);
                } catch (ErrnoException e) {
                    return !e.is(Errno.ESRCH);
                }
                if (System.nanoTime() > deadline) {
                    return true;
                }
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return true;
            }
        }
    }
}
