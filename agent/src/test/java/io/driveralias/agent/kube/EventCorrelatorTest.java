package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.core.PodRef;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class EventCorrelatorTest {

    private static final Instant T0 = Instant.parse("2024-05-01T10:00:00Z");
    private static final PodRef POD = new PodRef("ml", "trainer-0", "uid-1", "pytorch");

    private final EventCorrelator correlator = new EventCorrelator(Duration.ofMinutes(10), 3);

    private static PodEvent event(PodRef pod, String message, Instant at) {
        return new PodEvent(pod, PodEvent.Type.WARNING, "DriverAliasRepairFailed", message, at);
    }

    private EventCorrelator.Write record(PodEvent e) {
        EventCorrelator.Write w = correlator.next(e);
        correlator.recorded(w);
        return w;
    }

    @Test
    void theFirstEventIsANewObjectNamedAfterThePod() {
        EventCorrelator.Write w = record(event(POD, "m", T0));

        assertThat(w.patch()).isFalse();
        assertThat(w.count()).isEqualTo(1);
        assertThat(w.name()).isEqualTo("trainer-0." + Long.toHexString(T0.getEpochSecond() * 1_000_000_000L));
        assertThat(w.first()).isEqualTo(T0);
    }

    @Test
    void repeatsWithinTheWindowCountOnTheSameObject() {
        EventCorrelator.Write first = record(event(POD, "m", T0));
        EventCorrelator.Write second = record(event(POD, "m", T0.plusSeconds(60)));
        EventCorrelator.Write third = record(event(POD, "m", T0.plusSeconds(60 + 600)));

        assertThat(second.patch()).isTrue();
        assertThat(second.name()).isEqualTo(first.name());
        assertThat(second.count()).isEqualTo(2);
        assertThat(second.first()).isEqualTo(T0);
        assertThat(second.last()).isEqualTo(T0.plusSeconds(60));
        // the window runs from the last repeat, not from the first
        assertThat(third.patch()).isTrue();
        assertThat(third.count()).isEqualTo(3);
    }

    @Test
    void aRepeatAfterTheWindowIsANewObject() {
        EventCorrelator.Write first = record(event(POD, "m", T0));
        EventCorrelator.Write late = record(event(POD, "m", T0.plus(Duration.ofMinutes(10)).plusNanos(1)));

        assertThat(late.patch()).isFalse();
        assertThat(late.name()).isNotEqualTo(first.name());
        assertThat(late.count()).isEqualTo(1);
    }

    @Test
    void anotherMessageContainerOrTypeIsAnotherEvent() {
        record(event(POD, "m", T0));

        assertThat(correlator.next(event(POD, "other", T0)).patch()).isFalse();
        assertThat(correlator.next(event(new PodRef("ml", "trainer-0", "uid-1", "sidecar"), "m", T0)).patch())
                .isFalse();
        assertThat(correlator.next(new PodEvent(POD, PodEvent.Type.NORMAL, "DriverAliasRepairFailed", "m", T0))
                .patch()).isFalse();
        // a pod recreated under the same name has another uid
        assertThat(correlator.next(event(new PodRef("ml", "trainer-0", "uid-2", "pytorch"), "m", T0)).patch())
                .isFalse();
    }

    @Test
    void anUnrecordedWriteIsNotCounted() {
        record(event(POD, "m", T0));
        EventCorrelator.Write failedToSend = correlator.next(event(POD, "m", T0.plusSeconds(1)));

        assertThat(correlator.next(event(POD, "m", T0.plusSeconds(2))).count()).isEqualTo(failedToSend.count());
    }

    @Test
    void theCacheIsBounded() {
        EventCorrelator.Write oldest = record(event(POD, "m0", T0));
        for (int i = 1; i <= 3; i++) {
            record(event(POD, "m" + i, T0));
        }

        EventCorrelator.Write again = correlator.next(event(POD, "m0", T0.plusSeconds(1)));
        assertThat(again.patch()).isFalse();
        assertThat(again.name()).isNotEqualTo(oldest.name());
    }

    @Test
    void namesAreUniqueEvenAtTheSameInstant() {
        EventCorrelator.Write a = correlator.next(event(POD, "a", T0));
        EventCorrelator.Write b = correlator.next(event(POD, "b", T0));
        assertThat(a.name()).isNotEqualTo(b.name());
    }

    @Test
    void aLongPodNameIsCutToAValidName() {
        // 253 characters; cut before the 17 of ".<16 hex digits>", it would end in ".-"
        String longName = "a".repeat(234) + ".-" + "c".repeat(17);
        EventCorrelator.Write w = correlator.next(event(new PodRef("ml", longName, "u", "c"), "m", T0));

        assertThat(w.name()).hasSizeLessThanOrEqualTo(253).matches("[a-z0-9]([a-z0-9.-]*[a-z0-9])?")
                .startsWith("a".repeat(234) + ".").doesNotContain("-.", "..");
    }
}
