package io.driveralias.agent.live;

import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.repair.RepairReport;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * What examining one container came to.
 *
 * @param report    empty unless the container's root was opened (not for excluded or gone)
 * @param startedAt the start of the container that was examined, to recognise it later
 * @param detail    for excluded, gone, or failures before planning: why, in words
 */
public record Examination(ContainerRef container, ContainerOutcome outcome, Optional<RepairReport> report,
                          Optional<Instant> startedAt, Duration took, String detail) {
}
