package io.driveralias.agent.live;

import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.core.LateRepairCause;
import io.driveralias.agent.repair.RepairReport;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * What examining one container came to.
 *
 * @param report     empty unless the container's root was opened (not for excluded or gone)
 * @param startedAt  the start of the container that was examined, to recognise it later
 * @param receivedAt when the event (or reconcile) that asked for this examination arrived
 * @param verifiedAt when the aliases were known to be right: for a container seeded before
 *                   its start, when the seeding finished
 * @param detail     for excluded, gone, or failures before planning: why, in words
 * @param lateCause  for a GPU container repaired after its first instruction: why not before it
 * @param processStartedAt when the container's process started, as its kernel says (the
 *                   runtime's own record can be later than the process's first instruction)
 * @param driverLook what its loader takes of the driver, looked at when asked (after the examination)
 */
public record Examination(ContainerRef container, ContainerOutcome outcome, Optional<RepairReport> report,
                          Optional<Instant> startedAt, Instant receivedAt, Instant verifiedAt, String detail,
                          Optional<LateRepairCause> lateCause, Optional<Instant> processStartedAt,
                          DriverLooks.Look driverLook) {

    public Examination(ContainerRef container, ContainerOutcome outcome, Optional<RepairReport> report,
                       Optional<Instant> startedAt, Instant receivedAt, Instant verifiedAt, String detail) {
        this(container, outcome, report, startedAt, receivedAt, verifiedAt, detail, Optional.empty(), Optional.empty(),
                DriverLooks.Look.NONE);
    }

    /** This examination, with why the aliases were not in place before the container started. */
    public Examination late(LateRepairCause cause) {
        return new Examination(container, outcome, report, startedAt, receivedAt, verifiedAt, detail, Optional.of(cause),
                processStartedAt, driverLook);
    }

    /** This examination, with when the container's process started as the kernel says. */
    public Examination processStarted(Optional<Instant> at) {
        return new Examination(container, outcome, report, startedAt, receivedAt, verifiedAt, detail, lateCause, at,
                driverLook);
    }

    /** This examination, with the look at what its loader takes of the driver. */
    public Examination withDriverLook(DriverLooks.Look look) {
        return new Examination(container, outcome, report, startedAt, receivedAt, verifiedAt, detail, lateCause,
                processStartedAt, look);
    }

    /**
     * From the moment the repair could begin (the event's arrival, or the container's start
     * when a create event was still waiting for it) to verified aliases: the agent's own time.
     */
    public Duration repairTook() {
        Instant from = startedAt.filter(s -> s.isAfter(receivedAt) && !s.isAfter(verifiedAt)).orElse(receivedAt);
        return Duration.between(from, verifiedAt);
    }

    /**
     * How long the container ran without its aliases: from its process's start (the kernel's
     * record where the agent read it, else the runtime's) to verified aliases, zero when they
     * were in place before it started. What a user waited, however the agent came to the
     * container (an event, or a reconcile after an outage).
     */
    public Optional<Duration> exposure() {
        return processStartedAt.or(() -> startedAt)
                .map(s -> verifiedAt.isBefore(s) ? Duration.ZERO : Duration.between(s, verifiedAt));
    }
}
