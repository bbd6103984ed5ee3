package io.driveralias.agent.overlay;

import io.driveralias.agent.core.LateRepairCause;
import io.driveralias.agent.core.LinkAction;
import java.util.List;
import java.util.Optional;

/**
 * What came of one attempt to write a created container's aliases before its start: the links
 * written (each read back), or why none could be, for a container that asked for a GPU.
 * Neither for a container without a GPU request. {@code beforeProgram}: once written, the
 * container's program had provably not begun (no task yet, or its process still the runtime's
 * init), so the links were there at its first instruction.
 */
public record Seeding(List<LinkAction> links, Optional<LateRepairCause> skipped, boolean beforeProgram) {

    static final Seeding NOTHING_TO_DO = new Seeding(List.of(), Optional.empty(), false);

    static Seeding written(List<LinkAction> links, boolean beforeProgram) {
        return new Seeding(List.copyOf(links), Optional.empty(), beforeProgram);
    }

    static Seeding skipped(LateRepairCause cause) {
        return new Seeding(List.of(), Optional.of(cause), false);
    }
}
