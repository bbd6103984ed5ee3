package io.driveralias.agent.nri;

/** One StartContainer as its handler sees it: when the plugin answers regardless, and whether it did. */
public interface StartCall {

    /** The {@link System#nanoTime()} when the request's first byte was read: the deadline counts from here. */
    long receivedNanos();

    /** The {@link System#nanoTime()} at which the plugin answers the runtime, done or not. */
    long deadlineNanos();

    /**
     * Whether the runtime has its answer already. While the handler runs this turns true only at
     * the deadline: the container may then start before the handler is done.
     */
    boolean answered();

    /**
     * The container's first instruction needs nothing more: the runtime is answered now, and the
     * handler goes on (its report) on this thread. Once only; later answers are no-ops.
     */
    void answerNow();

    /** Nanoseconds until the deadline (negative once past). */
    default long remainingNanos() {
        return deadlineNanos() - System.nanoTime();
    }
}
