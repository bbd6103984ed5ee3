package io.driveralias.agent.it;

import static io.driveralias.agent.testing.TestImages.DEBIAN_LIB;
import static io.driveralias.agent.testing.TestImages.VERSION;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.driveralias.agent.metrics.DesignMetrics;
import io.driveralias.agent.metrics.PromQueries;
import io.driveralias.agent.metrics.Promtool;
import io.driveralias.agent.metrics.RepoFiles;
import io.driveralias.agent.metrics.ScrapedText;
import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.PrometheusServer.Sample;
import io.driveralias.agent.testing.PrometheusServer;
import io.driveralias.agent.testing.ServiceMonitorScrape;
import io.driveralias.agent.testing.SharedEngines;
import io.driveralias.agent.testing.TestImages;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.function.DoublePredicate;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.extension.TestWatcher;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * The whole observability path end to end: a real Prometheus scrapes the real agent (the
 * packaged jar, on the harness' dockerd) with the scrape job the Prometheus Operator makes of
 * the shipped ServiceMonitor ({@link ServiceMonitorScrape}: its honorLabels, jobLabel and
 * relabelings, applied by the real Prometheus to the labels Kubernetes service discovery would
 * give the agent's pod), evaluates the shipped alert rules, and answers every PromQL
 * expression of the dashboard and the rules while containers of every kind are being
 * repaired, refused, skipped and lost.
 *
 * <p>The tests run in order and share one agent and one Prometheus: readiness before Docker
 * is reachable, the scenario, then what can be read from it, then the mutations (removing the
 * unrepaired container, restarting Docker).
 */
@Timeout(300)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@ResourceLock(SharedEngines.DOCKER)
class PrometheusScrapeIT {

    private static final String JOB = "driver-alias-agent";
    /**
     * A tag of its own for every container of this test, and {@code --include-image} on it: a
     * container some other test left running on the shared dockerd is then only "excluded",
     * and the exact counts below stay exact.
     */
    private static final String IMAGE = "daa-test/prom-scrape:1";
    /** The same with a stale libcuda.so.1 in the image: it points at another driver's file, which is not there. */
    private static final String STALE_IMAGE = "daa-test/prom-scrape-stale:1";
    private static final String STALE_TARGET = "libcuda.so.470.57.02";
    /** One of the GPU containers' images also ships its own libcuda.so.1 (a build-time stub) that its loader cache lists first. */
    private static final String COPY_IMAGE = "daa-test/prom-scrape-copy:1";
    /** The shipped ServiceMonitor and the Service it selects. */
    private static final String SERVICE_MONITOR = "k8s/overlays/prometheus-operator/servicemonitor.yaml";
    private static final String SERVICE = "k8s/base/050-service.yaml";
    /** The agent's own pod, as service discovery names it: the labels a scrape without honorLabels would impose. */
    private static final String AGENT_NAMESPACE = "driver-alias";
    private static final String AGENT_POD = "driver-alias-agent-x7k2p";
    /** GPU containers missing all four aliases; one more comes with a stale libcuda.so.1. */
    private static final int GPU_CONTAINERS = 3;
    private static final int REPAIRED = GPU_CONTAINERS + 1;
    private static final List<String> ALIASES = List.of(
            "libcuda.so.1", "libnvidia-ml.so.1", "libnvidia-nvvm.so.4", "libnvidia-ptxjitcompiler.so.1");
    /** The histogram buckets docs/monitoring.md promises, in seconds. */
    private static final Set<Double> BUCKETS = Set.of(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
            Double.POSITIVE_INFINITY);
    private static final String POD_NAMESPACE = "gpu-jobs";
    private static final String POD_NAME = "trainer-0";
    private static final String POD_CONTAINER = "cuda";

    private static final Duration LONG = Duration.ofSeconds(90);

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private DockerHarness docker;
    private Path socket;
    private Path link;
    private GpuContainers containers;
    private AgentProcess agent;
    private PrometheusServer prometheus;
    private String instance;
    private boolean daemonStopped;

    private final List<String> gpuIds = new ArrayList<>();
    private String staleId;
    private String readOnlyId;
    private String sandboxId;
    /** Set once the scenario's state is reached and checked: the tests after it read that state. */
    private boolean scenarioReady;
    private boolean readOnlyRemoved;

    @RegisterExtension
    final TestWatcher diagnosticsOnFailure = new TestWatcher() {
        @Override
        public void testFailed(ExtensionContext context, Throwable cause) {
            System.err.println("=== " + context.getDisplayName() + " failed: diagnostics ===\n" + diagnostics());
        }
    };

    private static final String OWN_POD_UID = "5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f";

    @BeforeAll
    void startAgentAndPrometheus() throws IOException {
        docker = DockerHarness.get();
        Assumptions.assumeTrue(docker.host().startsWith("unix://"),
                "the test reaches Docker through a symlink to its socket; DOCKER_HOST is " + docker.host());
        String base = TestImages.image(docker, "debian-layout", DEBIAN_LIB, root -> { });
        docker.run("tag", base, IMAGE);
        String stale = TestImages.image(docker, "prom-scrape-stale", DEBIAN_LIB, root -> Files.createSymbolicLink(
                root.resolve(DEBIAN_LIB.substring(1)).resolve("libcuda.so.1"), Path.of(STALE_TARGET)));
        assertThat(stale).isEqualTo(STALE_IMAGE);
        String copy = TestImages.image(docker, "prom-scrape-copy", DEBIAN_LIB, root -> {
            io.driveralias.agent.testing.NativeLibraries.compile(root.resolve("usr/lib64"), "libcuda.so.1", "libcuda.so.1");
            io.driveralias.agent.testing.Processes.check(List.of("ldconfig", "-X", "-r", root.toString()));
        });
        assertThat(copy).isEqualTo(COPY_IMAGE);
        socket = Path.of(docker.host().substring("unix://".length()));
        // Not there yet: the agent starts while Docker is unreachable (see the first test).
        link = Files.createTempDirectory("daa-prom-socket-").resolve("docker.sock");
        containers = new GpuContainers(docker);
        // The agent's own pod, as the kubelet's Docker shim labels its containers: the agent is
        // ready once Docker runs it (driver_alias_own_pod_visible 1). Out of scope (--include-image).
        containers.run(base, null, List.of("sleep", "3600"), "--label", "io.kubernetes.pod.uid=" + OWN_POD_UID);
        agent = AgentProcess.start(docker, "--docker-host", "unix://" + link, "--ldconfig", "off",
                "--include-image", "daa-test/prom-scrape*", "--pod-uid", OWN_POD_UID);
        instance = "127.0.0.1:" + agent.port();
        // The ServiceMonitor's 30 s interval would make this test slow: 1 s here, all else as shipped.
        prometheus = PrometheusServer.start(new PrometheusServer.Config(
                ServiceMonitorScrape.translate(RepoFiles.read(SERVICE_MONITOR), instance, agentPod()),
                Duration.ofSeconds(1), List.of(RepoFiles.path(PromQueries.RULES))));
        log("agent (pid " + agent.pid() + ") on " + instance + ", Prometheus on " + prometheus.url());
    }

    /** The agent pod behind the shipped Service, as Kubernetes service discovery reports it. */
    @SuppressWarnings("unchecked")
    private static ServiceMonitorScrape.DiscoveredPod agentPod() {
        Map<String, Object> service = (Map<String, Object>) new org.snakeyaml.engine.v2.api.Load(
                org.snakeyaml.engine.v2.api.LoadSettings.builder().build()).loadFromString(RepoFiles.read(SERVICE));
        Map<String, Object> metadata = (Map<String, Object>) service.get("metadata");
        Map<String, Object> port = ((List<Map<String, Object>>) ((Map<String, Object>) service.get("spec")).get("ports"))
                .getFirst();
        return new ServiceMonitorScrape.DiscoveredPod(AGENT_NAMESPACE, (String) metadata.get("name"),
                (Map<String, String>) metadata.get("labels"), AGENT_POD, "agent", "test-node", (String) port.get("name"));
    }

    @AfterAll
    void stopEverything() throws IOException {
        if (containers != null) {
            containers.close();
        }
        if (daemonStopped) {
            docker.startDaemon();
        }
        if (agent != null) {
            if (agent.isAlive()) {
                try {
                    agent.stop();
                } catch (AssertionError e) {
                    System.err.println(e.getMessage());
                }
            }
            agent.close();
        }
        if (prometheus != null) {
            prometheus.close();
        }
        if (link != null) {
            Files.deleteIfExists(link);
            Files.deleteIfExists(link.getParent());
        }
        http.close();
    }

    @Test
    @Order(1)
    void notReadyUntilDockerIsReachableThenReady() throws IOException {
        long t0 = System.nanoTime();
        awaitProbe("/healthz", 200, LONG);
        assertThat(probe("/readyz")).as("/readyz before Docker is reachable").isEqualTo(503);

        List<Sample> up = prometheus.await("Prometheus to scrape the agent", "up{job=\"" + JOB + "\"} == 1", nonEmpty(),
                LONG, this::diagnostics);
        // The operator's target labels, from the ServiceMonitor: on series the agent does not label itself.
        assertThat(up).singleElement().satisfies(s -> assertThat(s.labels()).containsEntry("namespace", AGENT_NAMESPACE)
                .containsEntry("pod", AGENT_POD).containsEntry("container", "agent").containsEntry("service",
                        "driver-alias-agent").containsEntry("endpoint", "metrics").containsEntry("node", "test-node"));
        // DriverAliasRuntimeDisconnected's expression sees the disconnected agent, with the
        // scrape's labels: the job, the instance and the node from the target, and the runtime.
        List<Sample> down = prometheus.await("driver_alias_runtime_up == 0 in Prometheus", "driver_alias_runtime_up == 0",
                nonEmpty(), LONG, this::diagnostics);
        assertThat(down).singleElement().satisfies(s -> {
            assertThat(s.label("job")).isEqualTo(JOB);
            assertThat(s.label("instance")).isEqualTo(instance);
            assertThat(s.label("node")).isEqualTo("test-node");
            assertThat(s.label("runtime")).isEqualTo("docker");
        });
        // Docker's own gauge, kept for dashboards of one's own, says the same on a Docker node.
        assertThat(series("driver_alias_docker_up")).singleElement().satisfies(s -> assertThat(s.value()).isZero());
        // The host's driver is known before any container: the agent found its files itself.
        assertThat(series("driver_alias_build_info")).singleElement()
                .satisfies(s -> assertThat(s.label("driver_version")).isEqualTo(TestImages.hostDriverVersion()));
        // No reconcile yet: the timestamp series does not exist (a 0 would read as 1970).
        assertThat(prometheus.query("driver_alias_reconcile_last_success_timestamp_seconds")).isEmpty();
        assertThat(scrapeText()).doesNotContain("driver_alias_reconcile_last_success_timestamp_seconds");
        awaitAlert("DriverAliasRuntimeDisconnected", "pending", Map.of("runtime", "docker"));

        // Seconds have passed, with the agent retrying: still alive, still not ready.
        assertThat(probe("/readyz")).as("/readyz while Docker is unreachable").isEqualTo(503);
        assertThat(probe("/healthz")).as("/healthz while Docker is unreachable").isEqualTo(200);
        assertThat(agent.logLines("first reconcile")).isEmpty();

        Files.createSymbolicLink(link, socket);
        awaitProbe("/readyz", 200, LONG);
        assertThat(probe("/healthz")).isEqualTo(200);
        agent.awaitLog("first reconcile", Duration.ofSeconds(30));
        awaitValue("driver_alias_docker_up == 1", "driver_alias_docker_up", v -> v == 1, LONG);
        awaitValue("a recent reconcile", "time() - driver_alias_reconcile_last_success_timestamp_seconds",
                v -> v >= -1 && v < 30, LONG);
        log("readiness phase took " + millisSince(t0) + " ms");
    }

    @Test
    @Order(2)
    void theScenarioIsCountedExactly() {
        Assumptions.assumeTrue(probe("/readyz") == 200, "the agent never became ready (see the first test)");
        long t0 = System.nanoTime();
        for (int i = 0; i < GPU_CONTAINERS; i++) {
            gpuIds.add(containers.start(i == GPU_CONTAINERS - 1 ? COPY_IMAGE : IMAGE, DEBIAN_LIB));
        }
        staleId = containers.start(STALE_IMAGE, DEBIAN_LIB);
        String uid = UUID.randomUUID().toString();
        // A GPU container the kubelet started, with a read-only root: it stays unrepaired.
        readOnlyId = containers.start(IMAGE, DEBIAN_LIB, "--read-only",
                "--name", "k8s_" + POD_CONTAINER + "_" + POD_NAME + "_" + POD_NAMESPACE + "_" + uid + "_0",
                "--label", "io.kubernetes.pod.namespace=" + POD_NAMESPACE,
                "--label", "io.kubernetes.pod.name=" + POD_NAME,
                "--label", "io.kubernetes.pod.uid=" + uid,
                "--label", "io.kubernetes.container.name=" + POD_CONTAINER);
        // Not a GPU container.
        String plainId = containers.run(IMAGE, null, List.of("sleep", "600"));
        // The pod's sandbox: out of scope. It gets the driver files too, so that repairing it by
        // mistake would show as one repair too many.
        sandboxId = containers.start(IMAGE, DEBIAN_LIB,
                "--name", "k8s_POD_" + POD_NAME + "_" + POD_NAMESPACE + "_" + uid + "_0",
                "--label", "io.kubernetes.docker.type=podsandbox",
                "--label", "io.kubernetes.pod.namespace=" + POD_NAMESPACE,
                "--label", "io.kubernetes.pod.name=" + POD_NAME,
                "--label", "io.kubernetes.pod.uid=" + uid);
        log("started " + GPU_CONTAINERS + " GPU, stale " + staleId.substring(0, 12) + ", read-only "
                + readOnlyId.substring(0, 12) + ", plain " + plainId.substring(0, 12) + ", sandbox "
                + sandboxId.substring(0, 12) + " in " + millisSince(t0) + " ms");

        awaitValue(REPAIRED + " repaired containers", outcome("repaired"), v -> v == REPAIRED, LONG);
        awaitValue("the read-only container unrepaired", "driver_alias_unrepaired_containers", v -> v == 1, LONG);
        awaitValue("a read_only failure", "sum(driver_alias_repair_failures_total{reason=\"read_only\"})", v -> v >= 1, LONG);
        awaitValue("a failed examination", outcome("failed"), v -> v >= 1, LONG);
        awaitValue("a no_driver container", outcome("no_driver"), v -> v >= 1, LONG);
        awaitValue("an excluded container", outcome("excluded"), v -> v >= 1, LONG);
        prometheus.await("the read-only container's series", "driver_alias_container_unrepaired",
                s -> s.size() == 1 && s.getFirst().label("container_id").equals(readOnlyId), LONG, this::diagnostics);
        log("repairs, refusal and skips visible in Prometheus after " + millisSince(t0) + " ms");

        // What Prometheus counts is what happened in the containers.
        for (String id : gpuIds) {
            for (String alias : ALIASES) {
                String versioned = alias.substring(0, alias.indexOf(".so.") + 3) + "." + VERSION;
                containers.awaitLink(id, DEBIAN_LIB + "/" + alias, versioned);
            }
        }
        containers.awaitLink(staleId, DEBIAN_LIB + "/libcuda.so.1", "libcuda.so." + VERSION);
        assertThat(containers.readlink(readOnlyId, DEBIAN_LIB + "/libcuda.so.1")).as("read-only container").isEmpty();
        assertThat(containers.readlink(sandboxId, DEBIAN_LIB + "/libcuda.so.1")).as("pod sandbox").isEmpty();

        awaitGone();

        // A container counted again by a resync would show now.
        awaitSettled();

        assertThat(value(outcome("repaired"))).as("repaired, each GPU container once").isEqualTo(REPAIRED);
        assertThat(value(outcome("healthy"))).as("healthy").isZero();
        assertThat(value(outcome("no_driver"))).as("no_driver").isGreaterThanOrEqualTo(1);
        assertThat(value(outcome("excluded"))).as("excluded").isGreaterThanOrEqualTo(1);
        assertThat(value(outcome("gone"))).as("gone").isGreaterThanOrEqualTo(1);
        assertThat(value(outcome("failed"))).as("failed").isGreaterThanOrEqualTo(1);
        Map<String, Double> created = byLabel("driver_alias_links_created_total", "library");
        Map<String, Double> expected = new TreeMap<>();
        // The stale container needed three new aliases and one replaced.
        ALIASES.forEach(a -> expected.put(a, (double) (a.equals("libcuda.so.1") ? GPU_CONTAINERS : REPAIRED)));
        assertThat(created).as("links created by library").isEqualTo(expected);
        assertThat(byLabel("driver_alias_links_replaced_total", "library")).as("links replaced by library")
                .isEqualTo(Map.of("libcuda.so.1", 1.0));
        Map<String, Double> failures = byLabel("driver_alias_repair_failures_total", "reason");
        assertThat(failures).as("every reason from the start, but containerd's on this Docker node")
                .containsOnlyKeys(java.util.Arrays.stream(io.driveralias.agent.core.FailureReason.values())
                        .filter(r -> r != io.driveralias.agent.core.FailureReason.RUNTIME_ERROR)
                        .map(io.driveralias.agent.core.FailureReason::label).toList());
        assertThat(failures.get("read_only")).isGreaterThanOrEqualTo(1);
        failures.forEach((reason, n) -> {
            if (!reason.equals("read_only")) {
                assertThat(n).as("failures with reason " + reason).isZero();
            }
        });
        assertThat(byLabel("driver_alias_containers_total", "outcome")).as("every outcome from the start")
                .containsOnlyKeys(java.util.Arrays.stream(io.driveralias.agent.core.ContainerOutcome.values())
                        .map(io.driveralias.agent.core.ContainerOutcome::label).toList());

        assertThat(value("driver_alias_unrepaired_containers")).isEqualTo(1);
        assertThat(value("count(driver_alias_container_unrepaired)")).isEqualTo(1);
        assertThat(value("driver_alias_unrepaired_containers - on (job, instance) count by (job, instance) "
                + "(driver_alias_container_unrepaired)")).as("the gauge equals the per-container series").isZero();
        assertThat(series("driver_alias_container_unrepaired")).singleElement().satisfies(s -> {
            // honor_labels: the agent's namespace/pod/container name the broken container, not
            // the agent's own pod (which the target labels say).
            assertThat(s.labels()).containsEntry("namespace", POD_NAMESPACE).containsEntry("pod", POD_NAME)
                    .containsEntry("container", POD_CONTAINER).containsEntry("container_id", readOnlyId)
                    .containsEntry("reason", "read_only")
                    .containsEntry("job", JOB).containsEntry("instance", instance).containsEntry("node", "test-node");
            assertThat(s.labels().keySet()).noneMatch(k -> k.startsWith("exported_"));
            assertThat(readOnlyId).matches("[0-9a-f]{64}");
            assertThat(s.value()).isEqualTo(1);
        });

        assertThat(value("driver_alias_docker_up")).isEqualTo(1);
        assertThat(value("time() - driver_alias_reconcile_last_success_timestamp_seconds")).as("seconds since reconcile")
                .isBetween(-1.0, 30.0);
        for (String histogram : List.of("driver_alias_repair_duration_seconds", "driver_alias_exposure_seconds")) {
            assertHistogram(histogram, REPAIRED);
        }
        assertThat(series("driver_alias_build_info")).singleElement().satisfies(s -> {
            assertThat(s.label("driver_version")).isEqualTo(VERSION);
            // The jar's version from its manifest; "dev" only when run from classes.
            assertThat(s.label("version")).isNotEmpty().isNotEqualTo("dev");
            assertThat(s.value()).isEqualTo(1);
        });
        Map<String, Double> events = byLabel("driver_alias_docker_events_total", "action");
        assertThat(events.getOrDefault("create", 0.0)).as("create events").isGreaterThanOrEqualTo(GPU_CONTAINERS + 5);
        assertThat(events.getOrDefault("start", 0.0)).as("start events").isGreaterThanOrEqualTo(GPU_CONTAINERS + 5);
        assertThat(events.getOrDefault("die", 0.0)).as("die events (the container that exits at once)")
                .isGreaterThanOrEqualTo(1);
        assertThat(events.keySet()).as("actions").isSubsetOf("create", "start", "die", "destroy");
        assertThat(prometheus.query("{__name__=~\"driver_alias_.+\", job!=\"" + JOB + "\"}")).as("job label").isEmpty();
        scenarioReady = true;
        log("scenario took " + millisSince(t0) + " ms; counts " + byLabel("driver_alias_containers_total", "outcome")
                + ", failures " + failures + ", events " + events);
    }

    /**
     * A container that exits at once is seen either after its exit ("gone") or, when the agent
     * is quicker than {@code true}, while still running (then "no_driver": it has no driver
     * files, so it can never be counted as repaired). Try a few until one is gone.
     */
    private void awaitGone() {
        List<String> tried = new ArrayList<>();
        for (int attempt = 1; attempt <= 5; attempt++) {
            String quick = containers.run(IMAGE, null, List.of("true"));
            tried.add(quick.substring(0, 12));
            AgentProcess.awaitTrue("container " + quick + " to exit", LONG,
                    () -> docker.run("inspect", "-f", "{{.State.Running}}", quick).equals("false"));
            long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
            while (System.nanoTime() < deadline) {
                if (value(outcome("gone")) >= 1) {
                    log("a container that exits at once counted as gone after " + attempt + " attempt(s)");
                    return;
                }
                pause(250);
            }
        }
        throw new AssertionError("none of the containers that exit at once " + tried + " was counted as gone: outcomes "
                + byLabel("driver_alias_containers_total", "outcome") + "\n" + diagnostics());
    }

    /**
     * Two full reconciles from now (one every 5 s), and a scrape after the last: what was
     * queued before now has been examined and counted, and Prometheus has it.
     */
    private void awaitSettled() {
        double now = System.currentTimeMillis() / 1000.0;
        awaitValue("two reconciles", "driver_alias_reconcile_last_success_timestamp_seconds", v -> v > now + 5, LONG);
        prometheus.await("a scrape after them", "timestamp(driver_alias_reconcile_last_success_timestamp_seconds) - "
                + "driver_alias_reconcile_last_success_timestamp_seconds", s -> s.size() == 1 && s.getFirst().value() > 0.5,
                LONG, this::diagnostics);
    }

    private void assertHistogram(String name, int observations) {
        assertThat(value(name + "_count")).as(name + "_count").isEqualTo(observations);
        double sum = value(name + "_sum");
        assertThat(sum).as(name + "_sum").isFinite().isGreaterThanOrEqualTo(0);
        List<Sample> buckets = series(name + "_bucket");
        Set<Double> les = new TreeSet<>();
        for (Sample b : buckets) {
            les.add(le(b));
        }
        assertThat(les).as(name + " buckets").isEqualTo(new TreeSet<>(BUCKETS));
        List<Sample> sorted = buckets.stream().sorted((a, b) -> Double.compare(le(a), le(b))).toList();
        for (int i = 1; i < sorted.size(); i++) {
            assertThat(sorted.get(i).value()).as(name + " cumulative at le=" + sorted.get(i).label("le"))
                    .isGreaterThanOrEqualTo(sorted.get(i - 1).value());
        }
        assertThat(sorted.getLast().value()).as(name + "_bucket{le=\"+Inf\"}").isEqualTo(observations);
    }

    private static double le(Sample bucket) {
        String le = bucket.label("le");
        return le.equals("+Inf") ? Double.POSITIVE_INFINITY : Double.parseDouble(le);
    }

    @Test
    @Order(3)
    void everyDesignMetricIsInPrometheusWithItsType() {
        Assumptions.assumeTrue(scenarioReady, "needs the scenario of the previous test");
        JsonNode metadata = prometheus.get("/api/v1/metadata").path("data");
        List<String> problems = new ArrayList<>();
        for (Map.Entry<String, String> metric : DesignMetrics.TYPES.entrySet()) {
            String name = metric.getKey();
            String type = metric.getValue();
            // Prometheus scrapes OpenMetrics, whose metadata is per family: a counter's name
            // without _total, an info metric's without _info.
            JsonNode entries = metadata.path(name);
            if (entries.isMissingNode() && name.endsWith("_total")) {
                entries = metadata.path(name.substring(0, name.length() - "_total".length()));
            }
            if (entries.isMissingNode() && name.endsWith("_info")) {
                entries = metadata.path(name.substring(0, name.length() - "_info".length()));
            }
            Set<String> types = new LinkedHashSet<>();
            entries.forEach(e -> types.add(e.path("type").asText()));
            // The documented gauge (docs/monitoring.md): the text format says gauge; OpenMetrics' type for a *_info
            // metric that is always 1 is "info", which Prometheus keeps.
            Set<String> accepted = name.equals("driver_alias_build_info") ? Set.of("gauge", "info") : Set.of(type);
            if (types.size() != 1 || !accepted.containsAll(types)) {
                problems.add(name + ": expected type " + accepted + ", Prometheus has " + types);
            }
            List<String> series = type.equals("histogram")
                    ? List.of(name + "_bucket", name + "_sum", name + "_count") : List.of(name);
            for (String s : series) {
                if (series(s).isEmpty()) {
                    problems.add(s + ": no series in Prometheus");
                }
            }
        }
        Map<String, String> ours = new TreeMap<>();
        metadata.properties().forEach(e -> {
            if (e.getKey().startsWith("driver_alias_")) {
                ours.put(e.getKey(), e.getValue().toString());
            }
        });
        assertThat(problems).as("Prometheus metadata of driver_alias_*: " + ours).isEmpty();

        // The text format (what promtool and older scrapers read) declares the documented types (docs/monitoring.md).
        Map<String, String> declared = ScrapedText.parse(scrapeText()).types();
        assertThat(declared).containsAllEntriesOf(DesignMetrics.TYPES);
    }

    @Test
    @Order(4)
    void promtoolFindsNoProblemInTheLiveMetrics() throws Exception {
        Assumptions.assumeTrue(scenarioReady, "needs the scenario of the previous tests");
        String text = scrapeText();
        ScrapedText scraped = ScrapedText.parse(text);
        // Populated: histograms with observations, and the per-container series.
        assertThat(scraped.value("driver_alias_repair_duration_seconds_count", Map.of())).isEqualTo(REPAIRED);
        assertThat(scraped.samples("driver_alias_container_unrepaired")).singleElement()
                .satisfies(s -> assertThat(s.labels()).containsEntry("container_id", readOnlyId));
        Promtool.Result lint = Promtool.run(RepoFiles.root(), text, "check", "metrics");
        assertThat(lint.succeeded()).as("promtool check metrics:\n%s", lint.output()).isTrue();
        assertThat(lint.output()).as("promtool check metrics").isEmpty();
    }

    /**
     * Expressions that rightly give nothing in this scenario, each asserted empty (an alert that
     * must not fire here) rather than skipped. Keyed by alert name or by a metric the query reads.
     */
    private static final Map<String, String> EXPECTED_EMPTY = Map.of(
            "alert DriverAliasAgentDown", "the agent is up and scraped",
            "alert DriverAliasAgentMissing", "no kube-state-metrics here (promtool's tests make it fire)",
            "alert DriverAliasRuntimeDisconnected", "Docker is connected (the first test saw it match, and pend, while it was not)",
            "alert DriverAliasNoHostDriver", "the host's driver files are found (driver_alias_host_driver_files > 0)",
            "alert DriverAliasDriverLibraryMismatch", "the host's driver files and kernel module do not disagree here",
            "alert DriverAliasReconcileStale", "the agent reconciles every 5 s",
            "alert DriverAliasRepairsAfterStart", "every GPU container here is repaired before its start",
            "alert DriverAliasRuntimeNotWatched", "Docker runs the agent's own pod");

    @Test
    @Order(5)
    void everyDashboardAndAlertExpressionIsAnsweredWithData() {
        Assumptions.assumeTrue(scenarioReady, "needs the scenario of the previous tests");
        List<PromQueries.Query> queries = PromQueries.all();
        assertThat(queries).hasSizeGreaterThan(20);
        // One node, exactly (its name, which the ServiceMonitor's relabeling sets), and "All" as Grafana fills it in. The rate
        // window spans the whole scenario, so that the quantiles have observations to work on.
        String oneNode = "test-node";
        List<Map<String, String>> variableSets = List.of(
                Map.of("node", oneNode, "__rate_interval", "10m", "__interval", "1m", "__range", "1h",
                        "datasource", "prometheus"),
                Map.of("node", PromQueries.GRAFANA_DEFAULTS.get("node"), "__rate_interval", "10m",
                        "__interval", "1m", "__range", "1h", "datasource", "prometheus"));
        List<String> problems = new ArrayList<>();
        Set<String> emptyKeysUsed = new LinkedHashSet<>();
        for (Map<String, String> variables : variableSets) {
            for (PromQueries.Query q : queries) {
                String expr = q.evaluable(variables);
                String emptyKey = EXPECTED_EMPTY.keySet().stream()
                        .filter(k -> k.equals(q.origin()) || (!k.startsWith("alert ") && expr.contains(k)))
                        .findFirst().orElse(null);
                List<Sample> result;
                try {
                    // Polled for a while: a failed scrape empties everything for a second, and
                    // a pending alert comes back at the next evaluation.
                    result = poll(expr, emptyKey == null
                            ? r -> !r.isEmpty() && r.stream().allMatch(x -> Double.isFinite(x.value()))
                            : List::isEmpty, Duration.ofSeconds(30));
                } catch (AssertionError e) {
                    problems.add(q.origin() + ": " + e.getMessage());
                    continue;
                }
                if (emptyKey != null) {
                    emptyKeysUsed.add(emptyKey);
                    if (!result.isEmpty()) {
                        problems.add(q.origin() + ": expected nothing (" + EXPECTED_EMPTY.get(emptyKey) + "), got "
                                + result + "\n    " + expr);
                    }
                } else if (result.isEmpty()) {
                    problems.add(q.origin() + ": no data\n    " + expr);
                } else if (result.stream().anyMatch(s -> !Double.isFinite(s.value()))) {
                    problems.add(q.origin() + ": not a number: " + result + "\n    " + expr);
                }
                if (variables.get("node").equals(oneNode)) {
                    log(String.format("%-70s %s", q.origin(), result.isEmpty() ? "(empty)" : result.size() + " series, e.g. "
                            + result.getFirst().value()));
                }
            }
        }
        assertThat(problems).as("PromQL expressions against the live Prometheus").isEmpty();
        assertThat(emptyKeysUsed).as("every expected-empty entry still names a query")
                .containsExactlyInAnyOrderElementsOf(EXPECTED_EMPTY.keySet());
    }

    @Test
    @Order(6)
    void theRulesEvaluateAndTheRightAlertsArePending() {
        Assumptions.assumeTrue(scenarioReady, "needs the scenario of the previous tests");
        AgentProcess.awaitTrue("every rule evaluated without error", LONG, () -> {
            for (JsonNode group : prometheus.get("/api/v1/rules").path("data").path("groups")) {
                for (JsonNode rule : group.path("rules")) {
                    if (!rule.path("health").asText().equals("ok")) {
                        return false;
                    }
                }
            }
            return true;
        });
        Set<String> names = new TreeSet<>();
        for (JsonNode group : prometheus.get("/api/v1/rules").path("data").path("groups")) {
            for (JsonNode rule : group.path("rules")) {
                names.add(rule.path("name").asText());
                assertThat(rule.path("lastError").asText()).as("lastError of " + rule.path("name")).isEmpty();
            }
        }
        Set<String> inFile = new TreeSet<>();
        PromQueries.rules(RepoFiles.read(PromQueries.RULES)).forEach(q -> inFile.add(q.origin().replaceFirst("^\\w+ ", "")));
        assertThat(names).as("rules loaded by Prometheus").isEqualTo(inFile).contains("DriverAliasUnrepairedContainer");

        JsonNode unrepaired = awaitAlert("DriverAliasUnrepairedContainer", "pending", Map.of("container_id", readOnlyId));
        assertThat(unrepaired.path("labels").path("namespace").asText()).isEqualTo(POD_NAMESPACE);
        assertThat(unrepaired.path("labels").path("pod").asText()).isEqualTo(POD_NAME);
        assertThat(unrepaired.path("labels").path("container").asText()).isEqualTo(POD_CONTAINER);
        assertThat(unrepaired.path("labels").path("severity").asText()).isEqualTo("warning");
        assertThat(unrepaired.path("annotations").path("summary").asText())
                .contains(POD_NAMESPACE + "/" + POD_NAME + "/" + POD_CONTAINER);
        assertThat(unrepaired.path("annotations").path("description").asText())
                .contains(readOnlyId).contains(instance).contains("node test-node");
        JsonNode failing = awaitAlert("DriverAliasRepairFailures", "pending", Map.of("reason", "read_only"));
        assertThat(failing.path("annotations").path("summary").asText()).contains("read_only").contains(instance);
        // The GPU container whose image ships its own libcuda.so.1, listed first in its loader cache.
        JsonNode copy = awaitAlert("DriverAliasContainerDriverMismatch", "pending", Map.of("container_id", gpuIds.getLast()));
        assertThat(copy.path("labels").path("loads").asText()).isEqualTo("image");
        assertThat(copy.path("annotations").path("summary").asText()).contains("loads a libcuda.so.1 that does not match");

        Set<String> expectedActive = Set.of("DriverAliasUnrepairedContainer", "DriverAliasRepairFailures",
                "DriverAliasContainerDriverMismatch");
        try {
            AgentProcess.awaitTrue("the active alerts to be " + expectedActive + " and only those", LONG,
                    () -> activeAlerts().equals(expectedActive));
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + ": " + prometheus.get("/api/v1/alerts").path("data"), e);
        }
    }

    @Test
    @Order(7)
    void theSeriesOfAnUnrepairedContainerGoesWithTheContainer() {
        Assumptions.assumeTrue(scenarioReady, "needs the scenario of the previous tests");
        long t0 = System.nanoTime();
        docker.run("rm", "-f", readOnlyId);
        readOnlyRemoved = true;
        prometheus.await("the per-container series to go", "driver_alias_container_unrepaired", List::isEmpty, LONG,
                this::diagnostics);
        awaitValue("no unrepaired container", "driver_alias_unrepaired_containers", v -> v == 0, LONG);
        assertThat(value("count(driver_alias_container_unrepaired) or vector(0)")).isZero();
        assertThat(ScrapedText.parse(scrapeText()).samples("driver_alias_container_unrepaired")).isEmpty();
        AgentProcess.awaitTrue("DriverAliasUnrepairedContainer to resolve", LONG,
                () -> findAlert("DriverAliasUnrepairedContainer", Map.of()) == null);
        log("series gone " + millisSince(t0) + " ms after docker rm -f");

        // Outside a pod the agent exposes namespace="" and pod="": Prometheus stores them
        // without those labels, and honor_labels keeps the target's namespace and pod (the
        // agent's own) off the series.
        String name = "plain-ro-" + UUID.randomUUID().toString().substring(0, 8);
        String plain = containers.start(IMAGE, DEBIAN_LIB, "--read-only", "--name", name);
        List<Sample> series = prometheus.await("the series of a read-only container outside a pod",
                "driver_alias_container_unrepaired", s -> s.size() == 1, LONG, this::diagnostics);
        assertThat(series.getFirst().labels()).containsEntry("container", name).containsEntry("container_id", plain)
                .doesNotContainKeys("namespace", "pod").containsEntry("job", JOB);
        docker.run("rm", "-f", plain);
        prometheus.await("its series to go", "driver_alias_container_unrepaired", List::isEmpty, LONG, this::diagnostics);
        awaitValue("no unrepaired container", "driver_alias_unrepaired_containers", v -> v == 0, LONG);
    }

    /**
     * {@code driver_alias_containers_total} counts containers examined: a container that exits
     * at once is one container, counted once (gone, or no_driver when the agent was quicker
     * than its exit), like every other start. Five of them, one after the other.
     */
    @Test
    @Order(8)
    void eachContainerThatExitsAtOnceIsCountedOnce() {
        Assumptions.assumeTrue(scenarioReady, "needs the scenario of the previous tests");
        int quick = 5;
        awaitSettled();
        Map<String, Double> before = byLabel("driver_alias_containers_total", "outcome");
        double diesBefore = value("sum(driver_alias_docker_events_total{action=\"die\"})");
        for (int i = 0; i < quick; i++) {
            String id = containers.run(IMAGE, null, List.of("true"));
            AgentProcess.awaitTrue("container " + id + " to exit", LONG,
                    () -> docker.run("inspect", "-f", "{{.State.Running}}", id).equals("false"));
        }
        awaitValue("their die events", "sum(driver_alias_docker_events_total{action=\"die\"})",
                v -> v >= diesBefore + quick, LONG);
        awaitSettled();
        Map<String, Double> delta = new TreeMap<>();
        byLabel("driver_alias_containers_total", "outcome")
                .forEach((outcome, n) -> delta.put(outcome, n - before.getOrDefault(outcome, 0.0)));
        log(quick + " containers that exit at once counted as " + delta);
        assertThat(delta.get("repaired") + delta.get("healthy") + delta.get("failed"))
                .as("repairs among containers without a driver").isZero();
        assertThat(delta.values().stream().mapToDouble(Double::doubleValue).sum())
                .as("containers counted for %d containers that exit at once, each examined once per start: %s", quick, delta)
                .isEqualTo(quick);
    }

    @Test
    @Order(9)
    void notReadyWhileDockerIsDownAndReadyAgainAfter() throws IOException {
        Assumptions.assumeTrue(scenarioReady && readOnlyRemoved, "needs the previous tests");
        Assumptions.assumeTrue(docker.isPrivate(), "restarting dockerd needs the private engine");
        long t0 = System.nanoTime();
        // Containers would hold up dockerd's shutdown (sleep ignores SIGTERM).
        containers.close();
        assertThat(probe("/readyz")).isEqualTo(200);

        docker.stopDaemon();
        daemonStopped = true;
        Files.delete(link);
        awaitProbe("/readyz", 503, LONG);
        assertThat(probe("/healthz")).as("/healthz while Docker is down").isEqualTo(200);
        awaitValue("driver_alias_docker_up == 0", "driver_alias_docker_up", v -> v == 0, LONG);
        double lastReconcile = value("driver_alias_reconcile_last_success_timestamp_seconds");

        docker.startDaemon();
        daemonStopped = false;
        // Docker is back, but not where the agent looks: still not ready, still alive.
        long until = System.nanoTime() + Duration.ofSeconds(3).toNanos();
        while (System.nanoTime() < until) {
            assertThat(probe("/readyz")).as("/readyz while the agent cannot reach Docker").isEqualTo(503);
            assertThat(probe("/healthz")).as("/healthz while the agent cannot reach Docker").isEqualTo(200);
            pause(200);
        }
        assertThat(value("driver_alias_docker_up")).isZero();

        Files.createSymbolicLink(link, socket);
        awaitProbe("/readyz", 200, LONG);
        awaitValue("driver_alias_docker_up == 1", "driver_alias_docker_up", v -> v == 1, LONG);
        awaitValue("a reconcile after the reconnect", "driver_alias_reconcile_last_success_timestamp_seconds",
                v -> v > lastReconcile, LONG);
        assertThat(probe("/healthz")).isEqualTo(200);
        assertThat(agent.isAlive()).isTrue();
        assertThat(agent.logLines("ERROR")).as("ERROR lines in the agent's log").isEmpty();
        log("Docker down and back in " + millisSince(t0) + " ms");
    }

    // --- helpers ---------------------------------------------------------------------------

    private static String outcome(String outcome) {
        return "sum(driver_alias_containers_total{outcome=\"" + outcome + "\"})";
    }

    private double value(String expr) {
        List<Sample> samples = series(expr);
        if (samples.size() != 1) {
            throw new AssertionError("expected one sample for " + expr + ", got " + samples + "\n" + diagnostics());
        }
        return samples.getFirst().value();
    }

    private void awaitValue(String what, String expr, DoublePredicate condition, Duration timeout) {
        prometheus.await(what, expr, s -> s.size() == 1 && condition.test(s.getFirst().value()), timeout, this::diagnostics);
    }

    /**
     * An instant query whose series should be there, asked again for a while if they are not:
     * a scrape that fails (a stalled JVM on a loaded machine) marks every series of the target
     * stale until the next one succeeds. Empty only if they stay away.
     */
    private List<Sample> series(String expr) {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (true) {
            List<Sample> result = prometheus.query(expr);
            if (!result.isEmpty() || System.nanoTime() > deadline) {
                return result;
            }
            pause(250);
        }
    }

    private Map<String, Double> byLabel(String metric, String label) {
        Map<String, Double> values = new TreeMap<>();
        for (Sample s : series(metric)) {
            values.merge(s.label(label), s.value(), Double::sum);
        }
        return values;
    }

    /** Queries until {@code condition} holds or the time is up; the last result either way. */
    private List<Sample> poll(String expr, Predicate<List<Sample>> condition, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            List<Sample> result = prometheus.query(expr);
            if (condition.test(result) || System.nanoTime() > deadline) {
                return result;
            }
            pause(250);
        }
    }

    private static Predicate<List<Sample>> nonEmpty() {
        return s -> !s.isEmpty();
    }

    private Set<String> activeAlerts() {
        Set<String> active = new TreeSet<>();
        prometheus.get("/api/v1/alerts").path("data").path("alerts")
                .forEach(a -> active.add(a.path("labels").path("alertname").asText()));
        return active;
    }

    /** The active alert {@code name} whose labels include {@code labels}, or null. */
    private JsonNode findAlert(String name, Map<String, String> labels) {
        for (JsonNode alert : prometheus.get("/api/v1/alerts").path("data").path("alerts")) {
            JsonNode l = alert.path("labels");
            if (l.path("alertname").asText().equals(name)
                    && labels.entrySet().stream().allMatch(e -> l.path(e.getKey()).asText().equals(e.getValue()))) {
                return alert;
            }
        }
        return null;
    }

    private JsonNode awaitAlert(String name, String state, Map<String, String> labels) {
        long deadline = System.nanoTime() + LONG.toNanos();
        while (true) {
            JsonNode alert = findAlert(name, labels);
            if (alert != null && alert.path("state").asText().equals(state)) {
                return alert;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("alert " + name + labels + " not " + state + ": "
                        + prometheus.get("/api/v1/alerts").path("data") + "\n" + diagnostics());
            }
            pause(250);
        }
    }

    /** The agent's answer to GET {@code path}: the status code, or -1 if it does not answer. */
    private int probe(String path) {
        try {
            return http.send(HttpRequest.newBuilder(URI.create("http://" + instance + path))
                    .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (IOException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    private void awaitProbe(String path, int status, Duration timeout) {
        agent.await(path + " to answer " + status, timeout, () -> probe(path) == status);
    }

    /** GET /metrics as a plain scraper (no Accept header): the Prometheus text format. */
    private String scrapeText() {
        try {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://" + instance + "/metrics"))
                    .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).as("GET /metrics").isEqualTo(200);
            return r.body();
        } catch (IOException e) {
            throw new AssertionError("GET /metrics: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** What helps most when a wait times out; each part on its own, so that one failing leaves the rest. */
    private String diagnostics() {
        StringBuilder out = new StringBuilder();
        section(out, "agent", () -> "alive=" + agent.isAlive() + " /healthz=" + probe("/healthz")
                + " /readyz=" + probe("/readyz") + "\n");
        section(out, "Prometheus targets", () -> prometheus.targetsSummary());
        section(out, "Prometheus log (tail)", () -> prometheus.logTail(15) + "\n");
        section(out, "docker ps -a", () -> docker.tryRun("ps", "-a", "--no-trunc", "--format",
                "{{.ID}} {{.Image}} {{.Status}} {{.Names}}").output());
        section(out, "agent log (tail)", () -> {
            List<String> lines = agent.log().lines().toList();
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 150), lines.size())) + "\n";
        });
        return out.toString();
    }

    private static void section(StringBuilder out, String title, Supplier<String> content) {
        out.append("--- ").append(title).append(":\n");
        try {
            out.append(content.get());
        } catch (RuntimeException | AssertionError e) {
            out.append("(unavailable: ").append(e).append(")\n");
        }
    }

    private static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    private static long millisSince(long nanos) {
        return (System.nanoTime() - nanos) / 1_000_000;
    }

    private static void log(String line) {
        System.out.println("[PrometheusScrapeIT " + Instant.now() + "] " + line);
    }
}
