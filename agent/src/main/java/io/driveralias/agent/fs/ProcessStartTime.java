package io.driveralias.agent.fs;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * When a host process started, from the kernel's own record: field 22 of
 * {@code <host-proc>/<pid>/stat} ({@code starttime}, clock ticks since boot). The same process
 * always gives the same instant, so it tells one start of a container from the next (a new
 * process) where the runtime keeps no start time (containerd), and it exists from the moment
 * the process does, before its first instruction.
 *
 * <p>The boot instant is taken once per agent, as now less {@code <host-proc>/uptime} (10 ms steps), not
 * from {@code btime} in {@code <host-proc>/stat}, which is whole seconds: the exposure metric
 * measures from the start in milliseconds. Both are read from the host's procfs, which the
 * kernel writes: no container path is involved.
 */
public final class ProcessStartTime {

    /** USER_HZ, the unit of {@code starttime}: 100 on every Linux architecture the agent runs on. */
    static final long TICKS_PER_SECOND = 100;
    /** {@code stat} is one line of 52 numbers and a command name of at most 16 bytes (escaped, 64). */
    private static final int MAX_STAT = 4096;

    /**
     * The boot instant, one per host procfs (and clock) for the whole agent. Now less uptime moves
     * by up to 10 ms from one reading to the next, and a start is recognised by its exact instant
     * (the same start is examined and counted once): two readings, by two instances (the NRI path's
     * and containerd's) or by workers racing at the first reconcile, would date one process at two
     * instants, and it would be examined and counted twice. So it is read once, under the map's lock.
     */
    private static final Map<List<Object>, Instant> BOOTS = new ConcurrentHashMap<>();

    private final String hostProc;
    private final Clock clock;
    private volatile Instant boot;

    public ProcessStartTime(String hostProc, Clock clock) {
        this.hostProc = hostProc;
        this.clock = clock;
    }

    /** The start of process {@code pid}; empty when it does not exist (any more) or cannot be read. */
    public Optional<Instant> of(int pid) {
        if (pid <= 0) {
            return Optional.empty();
        }
        try {
            long ticks = startTicks(read(Path.of(hostProc, Integer.toString(pid), "stat")));
            return Optional.of(boot().plus(Duration.ofMillis(ticks * 1000 / TICKS_PER_SECOND)));
        } catch (IOException | IllegalArgumentException e) {
            return Optional.empty();
        }
    }

    private Instant boot() throws IOException {
        Instant b = boot;
        if (b == null) {
            try {
                b = BOOTS.computeIfAbsent(List.of(hostProc, clock), key -> {
                    try {
                        return clock.instant().minus(uptime(read(Path.of(hostProc, "uptime"))));
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                });
            } catch (UncheckedIOException e) {
                throw e.getCause();
            }
            boot = b;
        }
        return b;
    }

    /**
     * Whether a {@code stat} line is that of a container's process that has not begun the
     * container's program: runc names it {@code runc:[2:INIT]} until its start executes the
     * program (the name is the process's own: a program can take it too, which only makes the
     * agent think its aliases were early).
     */
    public static boolean isRuntimeInit(String stat) {
        int open = stat.indexOf('(');
        int close = stat.lastIndexOf(')');
        return open >= 0 && close > open && RUNTIME_INIT_NAMES.contains(stat.substring(open + 1, close));
    }

    /**
     * Whether a {@code stat} line's state is that of a process that has exited (a zombie its
     * runtime has not reaped yet, or a dead one). The state follows the command name's last ')'.
     */
    public static boolean hasEnded(String stat) {
        int close = stat.lastIndexOf(')');
        char state = close >= 0 && close + 2 < stat.length() ? stat.charAt(close + 2) : '?';
        return state == 'Z' || state == 'X' || state == 'x';
    }

    /** {@code PF_EXITING} in a {@code stat} line's flags: set first thing in the kernel's {@code do_exit}. */
    private static final long PF_EXITING = 0x4;

    /**
     * Whether a {@code stat} line is that of a process on its way out: a zombie or dead one, or one
     * in {@code do_exit} (its flags say {@code PF_EXITING}). Such a process has dropped, or is
     * dropping, its mount namespace while a signal still reaches it, so its root no longer shows
     * the files the runtime mounted in. A line too short to hold the flags is judged by its state.
     */
    public static boolean isExiting(String stat) {
        if (hasEnded(stat)) {
            return true;
        }
        int end = stat.lastIndexOf(')');
        if (end < 0) {
            return false;
        }
        String[] fields = stat.substring(end + 1).trim().split(" ", 8);
        if (fields.length < 7) {
            return false;
        }
        try {
            return (Long.parseUnsignedLong(fields[6]) & PF_EXITING) != 0;
        } catch (NumberFormatException e) {
            return false;
        }
    }

    private static final java.util.Set<String> RUNTIME_INIT_NAMES = java.util.Set.of("runc:[2:INIT]", "runc:[1:CHILD]");

    /**
     * Whether process {@code pid} is a container's process that has not begun its program
     * ({@link #isRuntimeInit}); false where it does not exist or cannot be read.
     */
    public boolean inRuntimeInit(int pid) {
        if (pid <= 0) {
            return false;
        }
        try {
            return isRuntimeInit(read(Path.of(hostProc, Integer.toString(pid), "stat")));
        } catch (IOException e) {
            return false;
        }
    }

    /** {@code starttime} from a {@code stat} line: the 20th field after the command name's closing parenthesis. */
    public static long startTicks(String stat) {
        // The command name is the process's own choice and may hold spaces and parentheses.
        int end = stat.lastIndexOf(')');
        if (end < 0) {
            throw new IllegalArgumentException("not a stat line");
        }
        String[] fields = stat.substring(end + 1).trim().split(" ");
        if (fields.length < 20) {
            throw new IllegalArgumentException("stat line with " + fields.length + " fields after the name");
        }
        long ticks = Long.parseLong(fields[19]);
        if (ticks < 0) {
            throw new IllegalArgumentException("negative start time");
        }
        return ticks;
    }

    /** The first number of {@code /proc/uptime} ("12345.67 2345.89"). */
    static Duration uptime(String text) {
        String first = text.trim().split("\\s+")[0];
        int dot = first.indexOf('.');
        long seconds = Long.parseLong(dot < 0 ? first : first.substring(0, dot));
        String fraction = dot < 0 ? "" : (first.substring(dot + 1) + "000000000").substring(0, 9);
        if (seconds < 0 || !fraction.chars().allMatch(Character::isDigit)) {
            throw new IllegalArgumentException("not an uptime: " + first);
        }
        return Duration.ofSeconds(seconds, fraction.isEmpty() ? 0 : Long.parseLong(fraction));
    }

    /**
     * One open, read and close through the native calls: read for every container's start, where a
     * Java stream (a channel, a buffer and a cleaner each time) was about a tenth of a GPU pod's repair.
     */
    private static String read(Path file) throws IOException {
        int fd;
        try {
            fd = Libc.openHost(file.toString(), OpenFlags.O_RDONLY | OpenFlags.O_NOFOLLOW | OpenFlags.O_NONBLOCK);
        } catch (ErrnoException e) {
            throw new IOException(e.getMessage(), e);
        }
        try {
            return new String(KernelFiles.readOpen(fd, file.toString(), MAX_STAT), StandardCharsets.US_ASCII);
        } catch (ErrnoException e) {
            throw new IOException(e.getMessage(), e);
        } finally {
            Libc.close(fd);
        }
    }
}
