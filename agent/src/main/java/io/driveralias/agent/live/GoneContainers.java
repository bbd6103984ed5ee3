package io.driveralias.agent.live;

import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.core.FailureReason;
import io.driveralias.agent.repair.Problem;
import io.driveralias.agent.repair.RepairReport;
import java.time.Clock;
import java.time.Instant;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * What a GPU container found gone before its start could be verified is counted as: repaired,
 * missed (an alarm) or gone. Apart from the repair itself, as the one place that decides whether
 * the agent may say a container ran without its aliases: a false "missed" is a false alarm.
 */
final class GoneContainers {

    private final CreateWork createWork;
    private final Clock clock;

    GoneContainers(CreateWork createWork, Clock clock) {
        this.createWork = createWork;
        this.clock = clock;
    }

    /**
     * Failures that a container's end causes by itself (its root and process going away mid-write):
     * where the repair wrote something and failed only so, whether the container had its aliases
     * at its first instruction is not known. Any other reason (a conflict, a read-only root, ...)
     * means an alias it ran without.
     */
    private static final Set<FailureReason> FAILED_BY_ITS_END = EnumSet.of(FailureReason.IO,
            FailureReason.CONTAINER_GONE);

    /** What the agent knows of a container found gone: whether it asks for a GPU, and whether aliases were being written. */
    enum Seen {
        /** Not a GPU container, or not known to be one (removed before its description). */
        NOT_GPU,
        /** A GPU container without its aliases for all the agent did (nothing written, a seed aside, or a repair that failed). */
        LACKED,
        /** A GPU container gone while the agent was writing its aliases. */
        WHILE_WRITING
    }

    /**
     * A container gone before its start could be verified: repaired, if its aliases were
     * written before its process existed (a batch job that ran and exited meanwhile had them at
     * its first instruction); missed, for a GPU container into which nothing was written before it
     * was gone, or whose repair failed (it ran without them: counted and said); else gone. Aliases written after its
     * process was made (at its creation or by the repair it exited during) may or may not have
     * been there at its first instruction: nothing is claimed either way, neither repaired nor
     * missed (a container that found them was once said missed, a false alarm). Where nothing
     * says when its process was made ({@code processNotBefore}: an instant no later than that),
     * nothing is claimed: gone.
     */
    Examination gone(ContainerRef ref, Optional<Instant> startedAt, Optional<Instant> processNotBefore, Instant receivedAt,
                             String detail, Seen seen) {
        CreateWork.Seeded seed = createWork.takeSeeded(ref.id()).orElse(null);
        createWork.takeSkipped(ref.id());
        if (seed != null && (seed.beforeProgram() || FirstInstruction.aliasesWereThere(Optional.of(seed.seededAt()),
                processNotBefore, false))) {
            return new Examination(ref, ContainerOutcome.REPAIRED, Optional.of(RepairReport.seeded(seed.links())), startedAt,
                    seed.receivedAt(), seed.seededAt(), "before start; " + detail).processStarted(Optional.of(seed.seededAt()));
        }
        if (seed != null) {
            return finish(ref, ContainerOutcome.GONE, Optional.empty(), startedAt, receivedAt, detail
                    + " (its aliases were written at its creation, not provably before its process began)");
        }
        if (seen == Seen.WHILE_WRITING) {
            return finish(ref, ContainerOutcome.GONE, Optional.empty(), startedAt, receivedAt, detail
                    + " (it ended while its aliases were being written: whether it had them at its first instruction is not known)");
        }
        if (seen == Seen.LACKED) {
            return finish(ref, ContainerOutcome.MISSED, Optional.of(new RepairReport(Optional.empty(), List.of(),
                    List.of(new Problem("/", FailureReason.CONTAINER_GONE, detail)))), startedAt, receivedAt, detail);
        }
        return finish(ref, ContainerOutcome.GONE, Optional.empty(), startedAt, receivedAt, detail);
    }

    /**
     * A container that exited during its repair, which failed ({@code report}). Where it failed
     * only as the container ended (its root and process going away), the create's work, still
     * kept, decides as for any container found gone (in CI a container seeded before its start,
     * which found its aliases, failed to be read as it exited and was said missed, a false alarm).
     * An alias it could not write (a conflict, a read-only root): it ran without that alias,
     * whatever its creation's work wrote.
     */
    Examination exitedDuringRepair(ContainerRef ref, Optional<Instant> startedAt, Optional<Instant> processNotBefore,
                                   Instant receivedAt, RepairReport report) {
        boolean byItsEnd = FAILED_BY_ITS_END.containsAll(report.failureReasons());
        if (!byItsEnd) {
            createWork.takeSeeded(ref.id());
            createWork.takeSkipped(ref.id());
        }
        return gone(ref, startedAt, processNotBefore, receivedAt, "exited during the repair",
                byItsEnd && !report.applied().isEmpty() ? Seen.WHILE_WRITING : Seen.LACKED);
    }

    private Examination finish(ContainerRef ref, ContainerOutcome outcome, Optional<RepairReport> report,
                               Optional<Instant> startedAt, Instant receivedAt, String detail) {
        return new Examination(ref, outcome, report, startedAt, receivedAt, clock.instant(), detail);
    }
}
