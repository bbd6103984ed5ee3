package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class SpamFilterTest {

    private static final Instant T0 = Instant.parse("2024-05-01T10:00:00Z");

    private final SpamFilter filter = new SpamFilter(5, Duration.ofMinutes(5), 2);

    private int allowed(String pod, int tries, Instant at) {
        int n = 0;
        for (int i = 0; i < tries; i++) {
            n += filter.allow(pod, at) ? 1 : 0;
        }
        return n;
    }

    @Test
    void aBurstThenOnePerInterval() {
        assertThat(allowed("a", 10, T0)).isEqualTo(5);
        assertThat(allowed("a", 10, T0.plus(Duration.ofMinutes(4)))).isZero();
        assertThat(allowed("a", 10, T0.plus(Duration.ofMinutes(5)))).isEqualTo(1);
        assertThat(allowed("a", 10, T0.plus(Duration.ofMinutes(15)))).isEqualTo(2);
    }

    @Test
    void aQuietPodRefillsUpToTheBurstOnly() {
        allowed("a", 5, T0);
        assertThat(allowed("a", 10, T0.plus(Duration.ofDays(1)))).isEqualTo(5);
    }

    @Test
    void podsDoNotShareABucket() {
        assertThat(allowed("a", 10, T0)).isEqualTo(5);
        assertThat(allowed("b", 10, T0)).isEqualTo(5);
    }

    @Test
    void aClockThatGoesBackGivesNothing() {
        allowed("a", 5, T0);
        assertThat(allowed("a", 1, T0.minus(Duration.ofHours(1)))).isZero();
        assertThat(allowed("a", 1, T0.plus(Duration.ofMinutes(5)))).isEqualTo(1);
    }

    @Test
    void forgottenPodsStartAgainWithAFullBucket() {
        allowed("a", 5, T0);
        allowed("b", 1, T0);
        allowed("c", 1, T0);
        assertThat(allowed("a", 10, T0)).isEqualTo(5);
    }
}
