package io.driveralias.agent.nri;

import java.time.Duration;

/**
 * How long the plugin may hold a StartContainer before it answers regardless.
 *
 * <p>The runtime drops a plugin for good (until it connects again) when one call overruns its
 * request timeout (2 s by default, sent in Configure), and while a call is held every pod start of
 * the node waits, since NRI serializes its calls. So the plugin answers at the earliest of:
 * <ul>
 * <li>the configured budget (500 ms by default), which is what a repair may add to one pod's start;
 * <li>half the runtime's request timeout: the other half is left for what the plugin does not see
 *     (the runtime's own writing and scheduling before the request reaches it, the answer's way back,
 *     and a stall of the agent's JVM or of a loaded node between the deadline and the answer), so that
 *     on the default 2 s at least a second separates the plugin's deadline from being dropped;
 * <li>half the caller's own deadline, when the ttrpc request carries one ({@code timeout_nano}),
 *     for the same reason.
 * </ul>
 * The clock starts when the request's first byte is read. A runtime that sends no request timeout
 * is taken to use NRI's default of 2 s.
 */
public record StartDeadline(Duration budget) {

    public static final Duration DEFAULT_BUDGET = Duration.ofMillis(500);
    /** NRI's own default request timeout, for a runtime that does not say. */
    public static final Duration RUNTIME_DEFAULT_TIMEOUT = Duration.ofSeconds(2);

    public StartDeadline {
        if (budget.isNegative() || budget.isZero()) {
            throw new IllegalArgumentException("the StartContainer budget must be positive: " + budget);
        }
    }

    /**
     * The time allowed for one call, in nanoseconds.
     *
     * @param requestTimeout    what Configure gave (zero or negative: not given)
     * @param callerTimeoutNano the request's own {@code timeout_nano} (0: none)
     */
    public long nanos(Duration requestTimeout, long callerTimeoutNano) {
        Duration runtime = requestTimeout.isNegative() || requestTimeout.isZero() ? RUNTIME_DEFAULT_TIMEOUT : requestTimeout;
        long allowed = Math.min(saturatedNanos(budget), saturatedNanos(runtime) / 2);
        if (callerTimeoutNano > 0) {
            allowed = Math.min(allowed, callerTimeoutNano / 2);
        }
        return allowed;
    }

    /** A duration in nanoseconds, {@link Long#MAX_VALUE} where it has more (a runtime may send any timeout). */
    static long saturatedNanos(Duration d) {
        try {
            return d.toNanos();
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE;
        }
    }
}
