package io.driveralias.agent.live;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.core.GpuRequest;
import io.driveralias.agent.core.LateRepairCause;
import io.driveralias.agent.repair.RootRepairer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ContainerRepairerTest {

    private static final Instant STARTED = Instant.parse("2026-11-30T10:00:00Z");

    @TempDir
    Path dir;

    private final FakeRuntime docker = new FakeRuntime();
    private ContainerFixtures fixtures;
    private ContainerRepairer repairer;

    @BeforeEach
    void setUp() throws Exception {
        fixtures = new ContainerFixtures(dir);
        repairer = fixtures.repairer(docker, null);
    }

    private Optional<Examination> examine(String id, Optional<Instant> examinedStart, boolean retry) throws Exception {
        return repairer.examine(id, Instant.now(), RootRepairer.Mode.APPLY, examinedStart, retry);
    }

    @Test
    void aRunningGpuContainerIsRepairedAndVerified() throws Exception {
        ContainerInfo c = fixtures.gpuContainer(ContainerFixtures.newId(), STARTED);
        docker.put(c);

        Examination e = examine(c.id(), Optional.empty(), false).orElseThrow();

        assertThat(e.outcome()).isEqualTo(ContainerOutcome.REPAIRED);
        assertThat(e.startedAt()).contains(STARTED);
        assertThat(Files.readSymbolicLink(fixtures.libraryDirectory(c).resolve(ContainerFixtures.ALIAS)))
                .hasToString(ContainerFixtures.DRIVER_FILE);
        // Through the merged view (no process handle): one inspect to examine, then one each
        // after opening and after the work, to tell that the root still belongs to the same start.
        assertThat(docker.inspects(c.id())).isEqualTo(3);
    }

    @Test
    void theStartAlreadyExaminedIsSkippedWithoutTouchingTheRoot() throws Exception {
        ContainerInfo c = fixtures.gpuContainer(ContainerFixtures.newId(), STARTED);
        docker.put(c);

        assertThat(examine(c.id(), Optional.of(STARTED), false)).isEmpty();
        assertThat(fixtures.libraryDirectory(c).resolve(ContainerFixtures.ALIAS)).doesNotExist();
        assertThat(docker.inspects(c.id())).isOne();
    }

    @Test
    void aRetryExaminesTheSameStartAgainButNotOnceItExited() throws Exception {
        ContainerInfo c = fixtures.gpuContainer(ContainerFixtures.newId(), STARTED);
        docker.put(c);
        assertThat(examine(c.id(), Optional.of(STARTED), true)).get()
                .extracting(Examination::outcome).isEqualTo(ContainerOutcome.REPAIRED);

        docker.put(ContainerFixtures.exited(c));
        assertThat(examine(c.id(), Optional.of(STARTED), true)).isEmpty();
    }

    @Test
    void aNewStartOfAnExaminedContainerIsExamined() throws Exception {
        ContainerInfo c = fixtures.gpuContainer(ContainerFixtures.newId(), STARTED);
        docker.put(ContainerFixtures.restarted(c));

        assertThat(examine(c.id(), Optional.of(STARTED), false)).get()
                .extracting(Examination::startedAt).isEqualTo(Optional.of(STARTED.plusSeconds(5)));
    }

    @Test
    void aContainerRemovedBeforeItsInspectIsGone() throws Exception {
        Examination e = examine(ContainerFixtures.newId(), Optional.empty(), false).orElseThrow();

        assertThat(e.outcome()).isEqualTo(ContainerOutcome.GONE);
        assertThat(e.report()).isEmpty();
    }

    /**
     * Removed while its aliases were being written: it may have found them at its first
     * instruction or not, so neither missed (no false alarm) nor failed: gone.
     */
    @Test
    void aContainerRemovedDuringItsRepairIsGoneNeitherMissedNorFailed() throws Exception {
        ContainerInfo c = fixtures.gpuContainer(ContainerFixtures.newId(), STARTED);
        docker.put(c);
        docker.afterInspect(c.id(), 1, info -> null);

        Examination e = examine(c.id(), Optional.empty(), false).orElseThrow();

        assertThat(e.outcome()).isEqualTo(ContainerOutcome.GONE);
        assertThat(e.detail()).contains("not known");
    }

    @Test
    void aContainerRestartedDuringItsRepairIsGoneNeitherMissedNorFailed() throws Exception {
        ContainerInfo c = fixtures.gpuContainer(ContainerFixtures.newId(), STARTED);
        docker.put(c);
        docker.afterInspect(c.id(), 1, ContainerFixtures::restarted);

        assertThat(examine(c.id(), Optional.empty(), false)).get()
                .extracting(Examination::outcome).isEqualTo(ContainerOutcome.GONE);
    }

    @Test
    void aContainerThatFailsAndThenExitsIsMissedNotFailed() throws Exception {
        ContainerInfo c = fixtures.gpuContainer(ContainerFixtures.newId(), STARTED);
        docker.put(c);
        // A directory where the alias belongs: a conflict the agent must not resolve.
        Files.createDirectory(fixtures.libraryDirectory(c).resolve(ContainerFixtures.ALIAS));
        // It exits after the repair failed, before the failure is reported.
        docker.afterInspect(c.id(), 3, ContainerFixtures::exited);

        assertThat(examine(c.id(), Optional.empty(), false)).get()
                .extracting(Examination::outcome).isEqualTo(ContainerOutcome.MISSED);
        assertThat(docker.inspects(c.id())).as("asked again whether it still runs").isEqualTo(4);
    }

    @Test
    void aConflictInARunningContainerIsAFailure() throws Exception {
        ContainerInfo c = fixtures.gpuContainer(ContainerFixtures.newId(), STARTED);
        docker.put(c);
        Files.createDirectory(fixtures.libraryDirectory(c).resolve(ContainerFixtures.ALIAS));

        assertThat(examine(c.id(), Optional.empty(), false)).get()
                .extracting(Examination::outcome).isEqualTo(ContainerOutcome.FAILED);
    }

    @Test
    void aCreatedContainerIsNotExaminedBeforeItStarts() throws Exception {
        ContainerInfo c = fixtures.gpuContainer(ContainerFixtures.newId(), STARTED);
        docker.put(c.toBuilder().running(false).pid(0).startedAt(Optional.empty()).build());

        assertThat(examine(c.id(), Optional.empty(), false)).isEmpty();
        assertThat(fixtures.libraryDirectory(c).resolve(ContainerFixtures.ALIAS)).doesNotExist();
    }

    @Test
    void aCreatedGpuContainerIsSeededButNotAReadOnlyOneNorAnExcludedOne() throws Exception {
        ContainerRepairer seeding = fixtures.repairer(docker, fixtures.seeder(),
                new io.driveralias.agent.core.ContainerScope(List.of(), List.of("excluded/*")));
        ContainerInfo plain = fixtures.createdOnOverlay(ContainerFixtures.newId(), "cuda", false);
        ContainerInfo readOnly = fixtures.createdOnOverlay(ContainerFixtures.newId(), "cuda", true);
        ContainerInfo excluded = fixtures.createdOnOverlay(ContainerFixtures.newId(), "excluded/cuda", false);
        for (ContainerInfo c : List.of(plain, readOnly, excluded)) {
            docker.put(c);
            assertThat(seeding.examine(c.id(), Instant.now(), RootRepairer.Mode.APPLY, Optional.empty(), false))
                    .as("nothing to report before the start").isEmpty();
        }

        assertThat(upperAlias(plain)).isSymbolicLink();
        assertThat(upperAlias(readOnly)).as("a read-only root is the owner's choice").doesNotExist();
        assertThat(upperAlias(excluded)).doesNotExist();
    }

    @Test
    void aDryRunNeverSeeds() throws Exception {
        ContainerRepairer seeding = fixtures.repairer(docker, fixtures.seeder());
        ContainerInfo c = fixtures.createdOnOverlay(ContainerFixtures.newId(), "cuda", false);
        docker.put(c);

        seeding.examine(c.id(), Instant.now(), RootRepairer.Mode.DRY_RUN, Optional.empty(), false);

        assertThat(upperAlias(c)).doesNotExist();
    }

    private static Path upperAlias(ContainerInfo c) {
        return Path.of(c.overlay().orElseThrow().upperDir(), ContainerFixtures.LIB.substring(1), ContainerFixtures.ALIAS);
    }

    @Test
    void aCreatedContainerIsLookedAtWithoutInspectAndOneThatIsNotStartingIsSeededWithWhatWasRead() throws Exception {
        ContainerRepairer seeding = fixtures.repairer(docker, fixtures.seeder());
        ContainerInfo gpu = fixtures.createdOnOverlay(ContainerFixtures.newId(), "cuda", false);
        ContainerInfo plain = ContainerInfo.builder(ContainerFixtures.newId()).name("web").image("nginx")
                .storage("overlay2").overlay(gpu.overlay()).build();
        ContainerInfo readOnly = fixtures.createdOnOverlay(ContainerFixtures.newId(), "cuda", true);
        List.of(gpu, plain, readOnly).forEach(docker::put);

        assertThat(seeding.seedWhileStarting(plain.id(), Instant.now(), () -> true)).as("no GPU request: nothing to do").isTrue();
        assertThat(seeding.seedWhileStarting(readOnly.id(), Instant.now(), () -> true)).as("read-only: not ours to write").isTrue();
        // Not started within the patience (nobody starts it here): into its writable layer, with
        // what the runtime's list and files said (its layers included), no inspect.
        assertThat(seeding.seedWhileStarting(gpu.id(), Instant.now(), () -> true)).isTrue();

        assertThat(docker.peeks()).isEqualTo(3);
        assertThat(docker.inspects(plain.id()) + docker.inspects(readOnly.id()) + docker.inspects(gpu.id())).isZero();
        assertThat(upperAlias(readOnly)).doesNotExist();
        assertThat(upperAlias(gpu)).isSymbolicLink();
        // Only the one asking for no GPU has a start with nothing to write: not urgent.
        assertThat(seeding.plainStart(plain.id())).isTrue();
        assertThat(seeding.plainStart(gpu.id())).isFalse();
        assertThat(seeding.plainStart(readOnly.id())).as("a GPU container, though read-only: its start is examined as usual")
                .isFalse();
        seeding.forget(plain.id());
        assertThat(seeding.plainStart(plain.id())).isFalse();
    }

    @Test
    void aContainerWithoutAGpuRequestIsNeverOpenedWhateverItsImageOrMountsHold() throws Exception {
        ContainerInfo gpu = fixtures.gpuContainer(ContainerFixtures.newId(), STARTED);
        // The image ships a file named like the driver's, and a neighbour's volume holds a copy
        // of the driver under a library-shaped path: neither is a GPU request.
        Path volume = Files.createDirectories(dir.resolve("volumes/v/usr/lib/x86_64-linux-gnu"));
        Path copy = Files.copy(fixtures.hostDriverFile(), volume.resolve(ContainerFixtures.DRIVER_FILE));
        ContainerInfo plain = fixtures.gpuContainer(ContainerFixtures.newId(), STARTED).toBuilder()
                .mounts(List.of(new ContainerInfo.Mount("bind", copy.toString(),
                        ContainerFixtures.LIB + "/" + ContainerFixtures.DRIVER_FILE, false))).build();
        docker.put(gpu);
        docker.put(plain);

        Examination e = examine(plain.id(), Optional.empty(), false).orElseThrow();

        assertThat(e.outcome()).isEqualTo(ContainerOutcome.NO_DRIVER);
        assertThat(e.detail()).contains("no GPU request").contains("not the host's driver files");
        assertThat(fixtures.libraryDirectory(plain).resolve(ContainerFixtures.ALIAS)).doesNotExist();
        assertThat(docker.inspects(plain.id())).as("described, never opened").isOne();
        assertThat(examine(gpu.id(), Optional.empty(), false).orElseThrow().outcome()).isEqualTo(ContainerOutcome.REPAIRED);
    }

    @Test
    void aGpuRequestWithoutTheHostsFilesGetsNoAliasForAFileOfItsOwn() throws Exception {
        // Asked the runtime for a GPU, but the file at the driver's name is the image's own copy.
        ContainerInfo c = fixtures.gpuContainer(ContainerFixtures.newId(), STARTED).toBuilder().mounts(List.of())
                .gpu(io.driveralias.agent.core.GpuRequest.of("nvidia", true, List.of("NVIDIA_VISIBLE_DEVICES=all"), false,
                        false)).build();
        Files.write(fixtures.libraryDirectory(c).resolve(ContainerFixtures.DRIVER_FILE),
                Files.readAllBytes(fixtures.hostDriverFile()));
        docker.put(c);

        Examination e = examine(c.id(), Optional.empty(), false).orElseThrow();

        assertThat(e.outcome()).isEqualTo(ContainerOutcome.NO_DRIVER);
        assertThat(fixtures.libraryDirectory(c).resolve(ContainerFixtures.ALIAS)).doesNotExist();
    }

    @Test
    void aContainerRepairedBeforeItsStartAndGoneBeforeTheStartPathLooksCountsAsRepairedOnlyIfItsStartIsKnownLater()
            throws Exception {
        ContainerRepairer seeding = fixtures.repairer(docker, fixtures.seeder());
        ContainerInfo c = fixtures.createdOnOverlay(ContainerFixtures.newId(), "cuda", false);
        docker.put(c);
        assertThat(seeding.examine(c.id(), Instant.now(), RootRepairer.Mode.APPLY, Optional.empty(), false)).isEmpty();
        assertThat(upperAlias(c)).isSymbolicLink();

        // A batch job: started after its aliases were written, ran and exited before its start event was
        // handled; its runtime still tells when it started.
        docker.put(ContainerFixtures.exited(c.toBuilder().startedAt(Optional.of(Instant.now().plusMillis(50))).build()));
        Examination e = seeding.examine(c.id(), Instant.now(), RootRepairer.Mode.APPLY, Optional.empty(), false)
                .orElseThrow();

        assertThat(e.outcome()).isEqualTo(ContainerOutcome.REPAIRED);
        assertThat(e.detail()).startsWith("before start");
        assertThat(e.report().orElseThrow().applied()).extracting(l -> l.action().name())
                .containsExactly(ContainerFixtures.ALIAS);
        // Counted once: a second look finds nothing seeded any more.
        assertThat(seeding.examine(c.id(), Instant.now(), RootRepairer.Mode.APPLY, Optional.empty(), false)
                .orElseThrow().outcome()).isEqualTo(ContainerOutcome.MISSED);
    }

    @Test
    void onlyAStartRecordedBeforeTheProcessWasMadeDatesTheProcess() {
        Instant at = Instant.parse("2026-11-30T10:00:00Z");
        ContainerInfo kernel = ContainerInfo.builder("a").running(true).pid(7).startedAt(Optional.of(at)).build();
        // Docker before 26 stamps StartedAt once runc has started the process: no proof of anything before it.
        ContainerInfo stampedAfter = kernel.toBuilder().startBeforeProcess(false).build();

        assertThat(ContainerRepairer.processNotBefore(kernel)).contains(at);
        assertThat(ContainerRepairer.processNotBefore(stampedAfter)).isEmpty();
        assertThat(ContainerRepairer.processNotBefore(ContainerInfo.builder("b").build())).isEmpty();
    }

    /**
     * Seeded before its start, then a repair that failed on an alias it could not write (a
     * conflict) and an exit: it ran without that alias, whatever the seed wrote: missed. (A repair
     * that failed only as the container ended leaves the seed to decide: see ReliabilityIT.)
     */
    @Test
    void aSeededContainerWhoseRepairFailsOnAConflictAndThenExitsIsMissed() throws Exception {
        ContainerRepairer seeding = fixtures.repairer(docker, fixtures.seeder());
        ContainerInfo c = fixtures.createdOnOverlay(ContainerFixtures.newId(), "cuda", false);
        docker.put(c);
        assertThat(seeding.examine(c.id(), Instant.now(), RootRepairer.Mode.APPLY, Optional.empty(), false)).isEmpty();
        Path lib = Files.createDirectories(Path.of(c.overlay().orElseThrow().mergedDir(), ContainerFixtures.LIB.substring(1)));
        Files.createFile(lib.resolve(ContainerFixtures.DRIVER_FILE));
        Files.createDirectory(lib.resolve(ContainerFixtures.ALIAS));
        docker.put(c.toBuilder().running(true).pid(900_501).startedAt(Optional.of(Instant.now())).build());
        docker.afterInspect(c.id(), 4, ContainerFixtures::exited);

        Examination e = seeding.examine(c.id(), Instant.now(), RootRepairer.Mode.APPLY, Optional.empty(), false)
                .orElseThrow();

        assertThat(e.outcome()).as(e.detail() + " " + e.report()).isEqualTo(ContainerOutcome.MISSED);
        assertThat(e.detail()).contains("exited during the repair");
    }

    @Test
    void aContainerSeededBeforeItsStartIsReportedWithoutExposureWhateverItsRuntimeRecordedAsItsStart() throws Exception {
        ContainerRepairer seeding = fixtures.repairer(docker, fixtures.seeder());
        ContainerInfo c = fixtures.createdOnOverlay(ContainerFixtures.newId(), "cuda", false);
        docker.put(c);
        assertThat(seeding.examine(c.id(), Instant.now(), RootRepairer.Mode.APPLY, Optional.empty(), false)).isEmpty();
        Path lib = Files.createDirectories(Path.of(c.overlay().orElseThrow().mergedDir(), ContainerFixtures.LIB.substring(1)));
        Files.createSymbolicLink(lib.resolve(ContainerFixtures.ALIAS), Path.of(ContainerFixtures.DRIVER_FILE));
        Files.createFile(lib.resolve(ContainerFixtures.DRIVER_FILE));
        // Docker 26 and later stamp StartedAt before runc makes the process, here before the aliases were written.
        docker.put(c.toBuilder().running(true).pid(900_500).startedAt(Optional.of(Instant.now().minusMillis(60))).build());

        Examination e = seeding.examine(c.id(), Instant.now(), RootRepairer.Mode.APPLY, Optional.empty(), false)
                .orElseThrow();

        assertThat(e.outcome()).isEqualTo(ContainerOutcome.REPAIRED);
        assertThat(e.detail()).isEqualTo("before start");
        assertThat(e.exposure()).contains(java.time.Duration.ZERO);
    }

    @Test
    void aGpuContainerRepairedAtItsStartSaysWhyNotBefore() throws Exception {
        ContainerRepairer seeding = fixtures.repairer(docker, fixtures.seeder());
        ContainerInfo missed = fixtures.gpuContainer(ContainerFixtures.newId(), STARTED);
        docker.put(missed);
        assertThat(seeding.examine(missed.id(), Instant.now(), RootRepairer.Mode.APPLY, Optional.empty(), false)
                .orElseThrow().lateCause()).as("never seen before it started").contains(LateRepairCause.MISSED_CREATE);

        ContainerInfo unlearned = fixtures.createdOnOverlay(ContainerFixtures.newId(), "cuda", false).toBuilder()
                .mounts(List.of()).gpu(GpuRequest.of("nvidia", true, List.of("NVIDIA_VISIBLE_DEVICES=all"), false, false))
                .build();
        docker.put(unlearned);
        assertThat(seeding.examine(unlearned.id(), Instant.now(), RootRepairer.Mode.APPLY, Optional.empty(), false))
                .isEmpty();
        ContainerInfo started = fixtures.gpuContainer(unlearned.id(), STARTED);
        docker.put(started);
        assertThat(seeding.examine(started.id(), Instant.now(), RootRepairer.Mode.APPLY, Optional.empty(), false)
                .orElseThrow().lateCause()).contains(LateRepairCause.RUNTIME_FILES_UNKNOWN);

        ContainerInfo disabled = fixtures.gpuContainer(ContainerFixtures.newId(), STARTED);
        docker.put(disabled);
        assertThat(examine(disabled.id(), Optional.empty(), false).orElseThrow().lateCause())
                .contains(LateRepairCause.DISABLED);
    }
}
