package io.driveralias.agent.overlay;

import io.driveralias.agent.core.LateRepairCause;
import io.driveralias.agent.core.LinkAction;
import java.util.List;
import java.util.Optional;

/**
 * What came of one attempt to write a created container's aliases before its start: the links
 * written (each read back), or why none could be, for a container that asked for a GPU.
 * Neither for a container without a GPU request.
 */
public record Seeding(List<LinkAction> links, Optional<LateRepairCause> skipped) {

    static final Seeding NOTHING_TO_DO = new Seeding(List.of(), Optional.empty());

    static Seeding written(List<LinkAction> links) {
        return new Seeding(List.copyOf(links), Optional.empty());
    }

    static Seeding skipped(LateRepairCause cause) {
        return new Seeding(List.of(), Optional.of(cause));
    }
}
