package io.driveralias.agent.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** A thing that happens at any rate is logged once, then once an interval with the count between. */
class LogThrottleTest {

    @Test
    void theFirstIsLoggedThenOneAnIntervalWithHowManyWereNot() {
        AtomicLong now = new AtomicLong(1_000);
        LogThrottle throttle = new LogThrottle(Duration.ofSeconds(60), now::get);

        assertThat(throttle.admit()).isZero();
        for (int i = 0; i < 20_000; i++) {
            assertThat(throttle.admit()).isEqualTo(-1);
        }
        now.addAndGet(Duration.ofSeconds(60).toNanos());
        assertThat(throttle.admit()).isEqualTo(20_000);
        assertThat(LogThrottle.since(20_000)).isEqualTo(" (20000 more since the last such line)");
        assertThat(throttle.admit()).isEqualTo(-1);
        now.addAndGet(Duration.ofMinutes(5).toNanos());
        assertThat(throttle.admit()).isEqualTo(1);
        assertThat(LogThrottle.since(0)).isEmpty();
    }
}
