package io.driveralias.agent.core;

import java.time.Duration;
import java.util.function.LongSupplier;

/**
 * One log line per interval for a thing that can happen at any rate (a runtime that misbehaves in
 * a loop): the first occurrence is logged, then at most one each {@code interval}, which says how
 * many went unlogged since the last. Thread-safe.
 */
public final class LogThrottle {

    private final long intervalNanos;
    private final LongSupplier nanoTime;
    private boolean any;
    private long lastLogged;
    private long unlogged;

    public LogThrottle(Duration interval) {
        this(interval, System::nanoTime);
    }

    LogThrottle(Duration interval, LongSupplier nanoTime) {
        this.intervalNanos = interval.toNanos();
        this.nanoTime = nanoTime;
    }

    /**
     * Whether this occurrence is to be logged: -1 when not (it is counted), else how many were not
     * logged since the last one that was.
     */
    public synchronized long admit() {
        long now = nanoTime.getAsLong();
        if (any && now - lastLogged < intervalNanos) {
            unlogged++;
            return -1;
        }
        any = true;
        lastLogged = now;
        long skipped = unlogged;
        unlogged = 0;
        return skipped;
    }

    /** " (N more since the last line)" for a line {@link #admit} let through after {@code skipped} unlogged ones; "" for none. */
    public static String since(long skipped) {
        return skipped > 0 ? " (" + skipped + " more since the last such line)" : "";
    }
}
