package io.driveralias.agent.live;

import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.live.ExaminationReporter.Reported;
import java.util.Optional;

/**
 * The one rule for a container found gone or missed after a start of it was reported: whether
 * that is news. Pure, apart from the agent's effects, so that each case is read in one place;
 * {@link Agent} counts nothing and reports nothing for a start this keeps.
 */
final class EndedStarts {

    private EndedStarts() {
    }

    /**
     * What to remember instead of reporting {@code e}, or empty where {@code e} is to be reported.
     * Nothing new to count, nothing to retry, when the start already reported has ended, or when a
     * restart (a crash loop, {@code --restart always}) ended before it could be examined after an
     * earlier start was repaired or found healthy. Such a start stays so: its aliases outlive it in the
     * container's writable layer, so no miss and no alarm; the next restart is judged the same way.
     */
    static Optional<Reported> kept(Examination e, Optional<Reported> previous) {
        boolean ended = e.outcome() == ContainerOutcome.GONE || e.outcome() == ContainerOutcome.MISSED;
        if (!ended || previous.isEmpty()) {
            return Optional.empty();
        }
        Reported before = previous.get();
        boolean sameStart = e.startedAt().isEmpty() || e.startedAt().equals(before.startedAt());
        // Repaired, or found with its aliases (a restart after a repaired start): either way they are
        // in its writable layer for the next start.
        boolean hadAliases = before.outcome() == ContainerOutcome.REPAIRED || before.outcome() == ContainerOutcome.HEALTHY;
        if (!sameStart && !hadAliases) {
            return Optional.empty();
        }
        return Optional.of(new Reported(sameStart ? before.startedAt() : e.startedAt(),
                hadAliases ? before.outcome() : ContainerOutcome.GONE, e.detail()));
    }
}
