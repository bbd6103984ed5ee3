package io.driveralias.agent.docker;

import io.driveralias.agent.core.LruMap;
import io.driveralias.agent.fs.ProcessStartTime;
import java.time.Duration;
import java.time.Instant;
import java.util.Collections;
import java.util.Map;
import java.util.Optional;

/**
 * When each Docker container's process was made, as the kernel says: what the adapter calls a
 * container's start. Docker's own {@code StartedAt} is no use for that: Docker 26 and later stamp
 * it before containerd makes the process (55 to 75 ms before on a 2-core node), Docker 20.10 after
 * runc has started it, when the container's program may have run for some milliseconds; and the
 * agent may know a process from containerd's {@code /tasks/create} before Docker answers anything
 * about its start. One start has one instant, whichever way the agent came to it (an event's pid,
 * an inspect of a running container, an inspect after it exited), so that one start is examined
 * and counted once. Bounded: the last process of the 4096 containers seen last.
 */
final class ProcessStarts {

    /**
     * How far Docker's record of a start may be from its process's: tens of ms on an idle node,
     * seconds on a loaded one. A container whose next start the agent missed (no event, no inspect
     * while it ran) and that came within this of the one it saw counts as that one: it has exited,
     * and only its count is lost.
     */
    static final Duration SAME_START = Duration.ofSeconds(10);

    private final ProcessStartTime kernel;
    private final Map<String, Instant> known = Collections.synchronizedMap(new LruMap<>(4096));

    ProcessStarts(ProcessStartTime kernel) {
        this.kernel = kernel;
    }

    /**
     * The start of the container's process {@code pid}, from the kernel, remembered; empty where
     * this host's processes are not visible (or it has already gone).
     */
    Optional<Instant> ofProcess(String containerId, int pid) {
        Optional<Instant> start = kernel.of(pid);
        start.ifPresent(s -> known.put(containerId, s));
        return start;
    }

    /**
     * The start of a container that does not run any more and whose last start Docker recorded at
     * {@code dockerStart}: its process's, if the agent saw that process.
     */
    Optional<Instant> ofEnded(String containerId, Instant dockerStart) {
        Instant process = known.get(containerId);
        return process != null && sameStart(process, dockerStart) ? Optional.of(process) : Optional.empty();
    }

    static boolean sameStart(Instant process, Instant docker) {
        return Duration.between(process, docker).abs().compareTo(SAME_START) <= 0;
    }
}
