package io.driveralias.agent.live;

import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.ContainerScope;
import io.driveralias.agent.core.LateRepairCause;
import io.driveralias.agent.core.LinkAction;
import io.driveralias.agent.core.LruMap;
import io.driveralias.agent.overlay.CreateTimeSeeder;
import io.driveralias.agent.overlay.Seeding;
import java.time.Clock;
import java.time.Instant;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * A created container's repair before its start ({@link CreateTimeSeeder}), and what it left for
 * the start path to judge: the links written (and when, and whether before the container's program
 * could have begun), or why none could be. Kept per container until its start is verified;
 * bounded, as some containers never start.
 */
final class CreateWork {

    /** Links written into a created container before its start, when, and whether provably before its program began. */
    record Seeded(Instant receivedAt, Instant seededAt, List<LinkAction> links, boolean beforeProgram) {
    }

    private final ContainerRuntime runtime;
    private final ContainerScope scope;
    private final CreateTimeSeeder seeder;
    private final Clock clock;
    private final Map<String, Seeded> seeded = Collections.synchronizedMap(new LruMap<>(4096));
    private final Map<String, LateRepairCause> notSeeded = Collections.synchronizedMap(new LruMap<>(4096));

    /** {@code seeder} null: no repair before start (one-shot commands, {@code --before-start=false}). */
    CreateWork(ContainerRuntime runtime, ContainerScope scope, CreateTimeSeeder seeder, Clock clock) {
        this.runtime = runtime;
        this.scope = scope;
        this.seeder = seeder;
        this.clock = clock;
    }

    boolean enabled() {
        return seeder != null;
    }

    /**
     * A container just created: what its runtime says of it (never waiting on a start in
     * progress, as Docker's inspect would), and if its runtime starts it within moments, its
     * aliases through its mounted overlay. True when the create needs nothing more: seeded,
     * not a GPU container, or not to be written; false to examine it as usual (describe, and
     * the upper layer while it is not starting). Nothing is written unless {@code mayWrite} says
     * the create still may (its start was not taken meanwhile: that start then writes).
     */
    boolean seedWhileStarting(String id, Instant receivedAt, BooleanSupplier mayWrite,
                              Consumer<ContainerInfo> described) {
        if (seeder == null) {
            return false;
        }
        Optional<ContainerInfo> peeked;
        try {
            peeked = runtime.peekCreated(id);
        } catch (ContainerRuntimeException e) {
            return false;
        }
        if (peeked.isEmpty()) {
            return false;
        }
        ContainerInfo info = peeked.get();
        described.accept(info);
        if (info.readOnlyRootfs() || scope.exclusion(info).isPresent() || !mayWrite.getAsBoolean()) {
            return true;
        }
        Optional<Seeding> seeding = seeder.seedIfStarting(info);
        if (seeding.isEmpty() && info.overlay().filter(o -> !o.lowerDir().isEmpty()).isPresent()) {
            // Not starting (the kubelet's rhythm): into its writable layer, with what was read
            // already; no inspect of a container that a start may hold.
            seeding = Optional.of(seeder.seed(info));
        }
        seeding.ifPresent(s -> remember(info.id(), s, receivedAt));
        return seeding.isPresent();
    }

    /**
     * A created GPU container described: its aliases before it starts. A read-only root
     * filesystem is its owner's choice: its writable layer is not ours to fill.
     */
    void seedBeforeStart(ContainerInfo info, Instant receivedAt) {
        if (seeder == null || info.readOnlyRootfs() || scope.exclusion(info).isPresent()) {
            return;
        }
        remember(info.id(), seeder.seed(info), receivedAt);
    }

    private void remember(String id, Seeding seeding, Instant receivedAt) {
        if (!seeding.links().isEmpty()) {
            seeded.put(id, new Seeded(receivedAt, clock.instant(), seeding.links(), seeding.beforeProgram()));
        }
        seeding.skipped().ifPresent(cause -> notSeeded.put(id, cause));
    }

    /** What the create wrote, taken once (its start is being judged). */
    Optional<Seeded> takeSeeded(String id) {
        return Optional.ofNullable(seeded.remove(id));
    }

    /** Why the create could write nothing, taken once. */
    Optional<LateRepairCause> takeSkipped(String id) {
        return Optional.ofNullable(notSeeded.remove(id));
    }
}
