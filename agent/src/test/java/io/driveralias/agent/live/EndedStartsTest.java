package io.driveralias.agent.live;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.live.ExaminationReporter.Reported;
import java.time.Instant;
import java.util.Optional;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The rule for an ended start, as a table: what is kept instead of a report, or none (report it). */
class EndedStartsTest {

    private static final Instant FIRST = Instant.parse("2026-11-30T10:00:00Z");
    private static final Instant RESTART = FIRST.plusSeconds(5);
    private static final ContainerRef REF = new ContainerRef("c0ffee", "/c", "image", Optional.empty());

    @ParameterizedTest(name = "{0} of start {1} after {2} of start {3}: keep {4} {5}")
    @CsvSource(nullValues = "-", value = {
        // examined, its start, previous, its start, kept outcome, kept start (- : reported, nothing kept)
        "GONE,     -,       -,        -,       -,        -",
        "REPAIRED, first,   REPAIRED, first,   -,        -",
        "FAILED,   restart, REPAIRED, first,   -,        -",
        "GONE,     first,   REPAIRED, first,   REPAIRED, first",
        "MISSED,   -,       REPAIRED, first,   REPAIRED, first",
        "GONE,     first,   FAILED,   first,   GONE,     first",
        "MISSED,   -,       MISSED,   first,   GONE,     first",
        "GONE,     restart, REPAIRED, first,   REPAIRED, restart",
        "MISSED,   restart, REPAIRED, first,   REPAIRED, restart",
        "GONE,     restart, FAILED,   first,   -,        -",
        "MISSED,   restart, GONE,     first,   -,        -",
        // A crash loop's restart found with its aliases, then a restart that ended during its repair.
        "MISSED,   restart, HEALTHY,  first,   HEALTHY,  restart",
        "GONE,     first,   HEALTHY,  first,   HEALTHY,  first",
    })
    void anEndedStartIsNewsOnlyWhenNeitherTheSameStartNorOneWithItsAliases(ContainerOutcome outcome, String started,
                                                                      ContainerOutcome previous, String previousStart,
                                                                      ContainerOutcome kept, String keptStart) {
        Examination e = new Examination(REF, outcome, Optional.empty(), at(started), RESTART, RESTART, "detail");
        Optional<Reported> before = Optional.ofNullable(previous).map(p -> new Reported(at(previousStart), p, "before"));

        Optional<Reported> result = EndedStarts.kept(e, before);

        if (kept == null) {
            assertThat(result).isEmpty();
        } else {
            assertThat(result).contains(new Reported(at(keptStart), kept, "detail"));
        }
    }

    private static Optional<Instant> at(String start) {
        if (start == null) {
            return Optional.empty();
        }
        return Optional.of(start.equals("first") ? FIRST : RESTART);
    }
}
