package io.driveralias.agent.live;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.driveralias.agent.core.ActionKind;
import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.core.DriverLoad;
import io.driveralias.agent.testing.DriverLoads;
import io.driveralias.agent.core.FailureReason;
import io.driveralias.agent.core.LinkAction;
import io.driveralias.agent.core.PodRef;
import io.driveralias.agent.kube.PodEvents;
import io.driveralias.agent.repair.LinkResult;
import io.driveralias.agent.repair.LinkStatus;
import io.driveralias.agent.repair.RepairReport;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

class ExaminationReporterTest {

    private static final String DIR = "/usr/lib/x86_64-linux-gnu";
    private static final Instant STARTED = Instant.parse("2026-11-30T10:00:00Z");
    private static final ContainerRef REF = new ContainerRef("c0ffee0000000000000000000000000000000000000000000000000000000001",
            "/train", "registry.example/ml:1", Optional.of(new PodRef("ml", "train-0", "uid-1", "main")));

    private final FakeAgentMetrics metrics = new FakeAgentMetrics();
    private final FakePodEvents events = new FakePodEvents();
    private final ExaminationReporter reporter = new ExaminationReporter(metrics, events);
    private final ListAppender<ILoggingEvent> log = new ListAppender<>();
    private final Logger logger = (Logger) LoggerFactory.getLogger(ExaminationReporter.class);

    @BeforeEach
    void captureLog() {
        log.start();
        logger.addAppender(log);
        logger.setLevel(Level.DEBUG);
    }

    @AfterEach
    void releaseLog() {
        logger.detachAppender(log);
        logger.setLevel(null);
    }

    private static LinkResult link(ActionKind kind, String name, LinkStatus status, FailureReason reason) {
        return new LinkResult(new LinkAction(kind, DIR, name, name.replaceAll("\\.so\\..*", ".so.535.104.05"), ""),
                status, reason, reason == null ? "" : "a regular file holds the alias name");
    }

    private static Examination examination(ContainerOutcome outcome, List<LinkResult> links, Instant verifiedAt) {
        RepairReport report = new RepairReport(Optional.of("535.104.05"), links, List.of());
        return new Examination(REF, outcome, Optional.of(report), Optional.of(STARTED), STARTED.plusSeconds(9),
                verifiedAt, "");
    }

    private List<String> lines(Level level) {
        return log.list.stream().filter(e -> e.getLevel() == level).map(ILoggingEvent::getFormattedMessage).toList();
    }

    @Test
    void aLateRepairIsCountedByCauseAndEachCauseExplainedOnce() {
        Examination late = examination(ContainerOutcome.REPAIRED, List.of(
                link(ActionKind.CREATE, "libcuda.so.1", LinkStatus.APPLIED, null)), STARTED.plusSeconds(10))
                .late(io.driveralias.agent.core.LateRepairCause.NO_OVERLAY);

        reporter.report(late, Optional.empty());
        reporter.report(late, Optional.empty());
        // Verified before the start: not late, whatever the examination says.
        reporter.report(examination(ContainerOutcome.REPAIRED, List.of(link(ActionKind.CREATE, "libcuda.so.1",
                LinkStatus.APPLIED, null)), STARTED.minusMillis(5)).late(io.driveralias.agent.core.LateRepairCause.DISABLED),
                Optional.empty());

        assertThat(metrics.late()).containsExactly(io.driveralias.agent.core.LateRepairCause.NO_OVERLAY,
                io.driveralias.agent.core.LateRepairCause.NO_OVERLAY);
        assertThat(lines(Level.INFO)).filteredOn(l -> l.contains("after their first instruction")).singleElement()
                .asString().contains("no_overlay").contains("no overlay layers");
    }

    @Test
    void aLastingConflictIsCountedAndWarnedOnceNotAtEveryReconcile() {
        Examination failed = examination(ContainerOutcome.FAILED, List.of(
                link(ActionKind.CREATE, "libnvidia-ml.so.1", LinkStatus.APPLIED, null),
                link(ActionKind.CONFLICT, "libcuda.so.1", LinkStatus.FAILED, FailureReason.CONFLICT)),
                STARTED.plusSeconds(10));

        ExaminationReporter.Reported first = reporter.report(failed, Optional.empty());
        ExaminationReporter.Reported again = first;
        for (int resync = 0; resync < 5; resync++) {
            again = reporter.report(failed, Optional.of(again));
        }

        assertThat(metrics.examined()).containsExactly(ContainerOutcome.FAILED);
        assertThat(metrics.failures()).containsExactly(FailureReason.CONFLICT);
        // The link that could be made is counted, although another alias conflicts.
        assertThat(metrics.created()).containsExactly("libnvidia-ml.so.1");
        assertThat(lines(Level.WARN)).hasSize(1).first().asString()
                .contains("conflict: a regular file holds the alias name (libcuda.so.1)")
                .contains("1 link(s) libnvidia-ml.so.1")
                .contains("10000 ms after the container started");
        assertThat(events.failed).isEqualTo(1);
        assertThat(metrics.unrepaired()).containsExactly(REF.id());
    }

    @Test
    void aFailureThatChangesIsWarnedAgainAndARepairAfterItIsCounted() {
        Examination conflict = examination(ContainerOutcome.FAILED, List.of(
                link(ActionKind.CONFLICT, "libcuda.so.1", LinkStatus.FAILED, FailureReason.CONFLICT)), STARTED);
        Examination readOnly = examination(ContainerOutcome.FAILED, List.of(
                link(ActionKind.CREATE, "libcuda.so.1", LinkStatus.FAILED, FailureReason.READ_ONLY)), STARTED);
        Examination repaired = examination(ContainerOutcome.REPAIRED, List.of(
                link(ActionKind.CREATE, "libcuda.so.1", LinkStatus.APPLIED, null)), STARTED.plusSeconds(70));

        ExaminationReporter.Reported r = reporter.report(conflict, Optional.empty());
        r = reporter.report(readOnly, Optional.of(r));
        reporter.report(repaired, Optional.of(r));

        assertThat(lines(Level.WARN)).hasSize(2);
        assertThat(lines(Level.INFO)).singleElement().asString()
                .contains("repaired container c0ffee000000 (ml/train-0/main)")
                .contains("70000 ms after the container started (repair 61000 ms)");
        assertThat(metrics.examined()).containsExactly(ContainerOutcome.FAILED, ContainerOutcome.REPAIRED);
        assertThat(metrics.exposures()).containsExactly(Duration.ofSeconds(70));
        assertThat(metrics.unrepaired()).isEmpty();
    }

    @Test
    void sixtyFiveThousandFailedLinksMakeOneShortLine() {
        List<LinkResult> links = new ArrayList<>();
        IntStream.range(0, 65_000).forEach(i -> links.add(
                link(ActionKind.CONFLICT, "libnvidia-x" + i + ".so.1", LinkStatus.FAILED, FailureReason.CONFLICT)));

        reporter.report(examination(ContainerOutcome.FAILED, links, STARTED), Optional.empty());

        assertThat(lines(Level.WARN)).singleElement().asString().contains("and 64990 more").hasSizeLessThan(2_000);
    }

    @Test
    void aPodLabelWithANewlineCannotForgeALogLine() {
        ContainerRef hostile = new ContainerRef(REF.id(), "/x", "img\nINFO repaired container 0000 (a/b/c)",
                Optional.of(new PodRef("ml", "p\n2026-11-30T10:00:00.000Z INFO  [repair-0] fake", "uid", "c\r")));
        Examination e = new Examination(hostile, ContainerOutcome.REPAIRED, Optional.of(new RepairReport(
                Optional.of("535.104.05"), List.of(link(ActionKind.CREATE, "libcuda.so.1", LinkStatus.APPLIED, null)),
                List.of())), Optional.of(STARTED), STARTED, STARTED, "");

        reporter.report(e, Optional.empty());

        assertThat(lines(Level.INFO)).singleElement().asString().doesNotContain("\n", "\r")
                .contains("p\\n2026-11-30T10:00:00.000Z INFO").contains("img\\nINFO");
    }

    /** An examination whose look at the loader answers {@code load}, counting how often it is taken. */
    private static Examination looking(ContainerOutcome outcome, DriverLoad load, int[] takes) {
        return examination(outcome, List.of(link(ActionKind.CREATE, "libcuda.so.1", LinkStatus.APPLIED, null)), STARTED)
                .withDriverLook(() -> {
                    takes[0]++;
                    return Optional.of(load);
                });
    }

    @Test
    void anImagesOwnCopyIsSaidOnceCountedOncePerStartAndItsSeriesLivesUntilTheContainerGoes() {
        int[] takes = {0};
        Examination e = looking(ContainerOutcome.REPAIRED, DriverLoads.imageCopy(), takes);

        ExaminationReporter.Reported first = reporter.report(e, Optional.empty());
        // The reconciles that follow find the same start in the same state.
        ExaminationReporter.Reported again = reporter.report(e, Optional.of(first));
        reporter.report(e, Optional.of(again));

        assertThat(takes[0]).as("the loader read once per start and outcome").isEqualTo(1);
        assertThat(metrics.driverVerdicts()).containsExactly(DriverLoad.Verdict.IMAGE);
        assertThat(metrics.mismatched()).containsExactly(REF.id());
        assertThat(events.driverLoads).isEqualTo(1);
        assertThat(lines(Level.WARN)).singleElement().asString()
                .contains("GPU container c0ffee000000 (ml/train-0/main): the image's own libcuda.so.1 (470.256.02) is loaded"
                        + " instead of the node's driver 535.104.05")
                .contains("remove the driver's libraries from the image");

        metrics.gone(REF.id());
        assertThat(metrics.mismatched()).isEmpty();
    }

    @Test
    void theNodesOwnDriverIsCountedAndSaidOnlyAtDebug() {
        DriverLoad node = DriverLoads.libcuda(DriverLoad.Source.NODE, DIR + "/libcuda.so.535.104.05", "535.104.05",
                Optional.empty());

        reporter.report(looking(ContainerOutcome.REPAIRED, node, new int[1]), Optional.empty());

        assertThat(metrics.driverVerdicts()).containsExactly(DriverLoad.Verdict.NODE);
        assertThat(metrics.mismatched()).isEmpty();
        assertThat(lines(Level.WARN)).isEmpty();
        assertThat(events.driverLoads).as("the Event sender decides; the node's driver sends nothing").isEqualTo(1);
    }

    /** Counts the Events the reporter asked for. */
    static final class FakePodEvents implements PodEvents {
        int repaired;
        int failed;
        int driverLoads;

        @Override
        public void driverLoad(ContainerRef container, DriverLoad load) {
            driverLoads++;
        }

        @Override
        public void repaired(ContainerRef container, RepairReport report) {
            repaired++;
        }

        @Override
        public void failed(ContainerRef container, RepairReport report) {
            failed++;
        }

        @Override
        public void close() {
        }
    }
}
