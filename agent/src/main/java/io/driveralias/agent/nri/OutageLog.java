package io.driveralias.agent.nri;

import io.driveralias.agent.core.Printable;
import java.time.Duration;
import org.slf4j.Logger;

/**
 * The plugin's log of its connection: one line when an outage begins (the first failure), one when
 * it ends (registered again, with how long it took and how many tries); the tries in between are
 * counted, not logged. Used by the plugin's one reading thread only.
 */
final class OutageLog {

    private final Logger log;
    private final Duration maxRetry;
    private long since;
    private int tries;

    OutageLog(Logger log, Duration maxRetry) {
        this.log = log;
        this.maxRetry = maxRetry;
    }

    /** The connection that was up is lost: the next failure is this outage's first. */
    void begin() {
        since = System.nanoTime();
        tries = 0;
    }

    void failed(String why) {
        if (tries++ == 0) {
            if (since == 0) {
                since = System.nanoTime();
            }
            log.info("NRI: {}; trying again every {} ms at most until it answers", Printable.of(why, 512), maxRetry.toMillis());
        }
    }

    /** Registered and configured: {@code runtime} names the runtime and the socket (escaped by the caller). */
    void ended(String runtime, Duration requestTimeout, Duration allowed) {
        String after = tries == 0 ? "" : String.format(" after %d tries in %.1f s", tries, (System.nanoTime() - since) / 1e9);
        log.info("NRI: registered with {}{} (request timeout {} ms; StartContainer answered within {} ms)", runtime, after,
                requestTimeout.toMillis(), allowed.toMillis());
        since = 0;
        tries = 0;
    }
}
