package io.driveralias.agent.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.driveralias.agent.metrics.PromQueries;
import io.driveralias.agent.metrics.RepoFiles;
import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.ContainerdHarness;
import io.driveralias.agent.testing.PrometheusServer.Sample;
import io.driveralias.agent.testing.PrometheusServer;
import io.driveralias.agent.testing.ServiceMonitorScrape;
import io.driveralias.agent.testing.SharedEngines;
import io.driveralias.agent.testing.TestImages;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * A containerd-only node under a real Prometheus: the packaged agent watching a private containerd
 * ({@link ContainerdHarness}) alone, scraped with the job the Prometheus Operator makes of the
 * shipped ServiceMonitor, the shipped alert rules loaded. Quiet while healthy (no alert, pending
 * or firing, and no Docker series at all), every dashboard query answered with series, and
 * DriverAliasRuntimeDisconnected firing for containerd when containerd goes away, then resolving.
 *
 * <p>The rules are the shipped file with each {@code for:} read in seconds instead of minutes (5m
 * becomes 5s): the same expressions, labels and annotations, so that "firing" and "quiet for longer
 * than any alert waits" fit in a test. Docker's agent has the same under {@code PrometheusScrapeIT}.
 */
@Timeout(400)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@ResourceLock(SharedEngines.CONTAINERD)
class ContainerdPrometheusIT {

    private static final String SERVICE_MONITOR = "k8s/overlays/prometheus-operator/servicemonitor.yaml";
    private static final Duration LONG = Duration.ofSeconds(90);
    /** Longer than the longest compressed "for" (30 s), and several evaluations past it. */
    private static final Duration QUIET = Duration.ofSeconds(40);

    private ContainerdHarness containerd;
    private AgentProcess agent;
    private PrometheusServer prometheus;
    private Path rules;
    private final List<String> containers = new ArrayList<>();

    @BeforeAll
    void startAgentAndPrometheus() throws IOException {
        containerd = ContainerdHarness.get();
        containerd.debianImage(ContainerdHarness.K8S);
        agent = AgentProcess.startOnContainerd(containerd);
        String instance = "127.0.0.1:" + agent.port();
        rules = Files.createTempFile("daa-rules-in-seconds-", ".yaml");
        Files.writeString(rules, RepoFiles.read(PromQueries.RULES).replaceAll("(?m)^(\\s+for: )(\\d+)m$", "$1$2s"));
        ServiceMonitorScrape.DiscoveredPod pod = new ServiceMonitorScrape.DiscoveredPod("driver-alias", "driver-alias-agent",
                Map.of("app.kubernetes.io/name", "driver-alias-agent", "app.kubernetes.io/part-of", "driver-alias-agent"),
                "driver-alias-agent-c0n7d", "agent", "containerd-node", "metrics");
        prometheus = PrometheusServer.start(new PrometheusServer.Config(
                ServiceMonitorScrape.translate(RepoFiles.read(SERVICE_MONITOR), instance, pod), Duration.ofSeconds(1),
                List.of(rules)));
        agent.await("/readyz 200", LONG, () -> agent.readyz() == 200);
    }

    @AfterAll
    void stopEverything() throws IOException {
        containers.forEach(id -> containerd.remove(ContainerdHarness.K8S, id));
        if (agent != null) {
            agent.close();
        }
        if (prometheus != null) {
            prometheus.close();
        }
        if (rules != null) {
            Files.deleteIfExists(rules);
        }
    }

    /** Healthy: a GPU container repaired, then nothing alerts, not even pending, for longer than any alert waits. */
    @Test
    @Order(1)
    void quietWhileHealthyAndNoDockerSeriesAtAll() {
        String id = gpuContainer(List.of());
        AgentProcess.awaitTrue("the GPU container's aliases", LONG, () -> aliasThere(id));
        await("the containerd connection in Prometheus", "driver_alias_runtime_up{runtime=\"containerd\"} == 1");
        await("the repair in Prometheus", "driver_alias_containers_total{outcome=\"repaired\"} >= 1");
        // Settled first: before Prometheus' first scrape of the agent, absent(up) made DriverAliasAgentDown pend.
        AgentProcess.awaitTrue("no alert once settled", LONG, () -> activeAlerts().isEmpty());

        long until = System.nanoTime() + QUIET.toNanos();
        while (System.nanoTime() < until) {
            assertThat(activeAlerts()).as("alerts, pending or firing, on a healthy containerd node").isEmpty();
            pause(1000);
        }
        assertThat(prometheus.query("{__name__=~\"driver_alias_docker_.+\"}")).as("Docker's series").isEmpty();
        assertThat(prometheus.query("driver_alias_repair_failures_total{reason=\"docker_error\"}")).isEmpty();
        assertThat(prometheus.query("driver_alias_runtime_up")).singleElement()
                .satisfies(s -> assertThat(s.labels()).containsEntry("runtime", "containerd").containsEntry("node", "containerd-node"));
        assertThat(prometheus.query("driver_alias_host_driver_files > 0")).hasSize(1);
        System.out.println("[containerd-prometheus] healthy containerd-only node: no alert for " + QUIET.toSeconds()
                + " s, no Docker series");
    }

    /**
     * Every query of the dashboard gives series for a containerd-only agent, with a container it
     * cannot repair on the node (read-only) so that the unrepaired panels have one too.
     */
    @Test
    @Order(2)
    void everyDashboardQueryIsAnsweredWithSeries() {
        // One more repaired while Prometheus watches (rates and quantiles need a change it saw), one
        // whose image has a stale libcuda.so.1 (replaced), and one the agent cannot repair.
        String repaired = gpuContainer(List.of());
        AgentProcess.awaitTrue("the second GPU container's aliases", LONG, () -> aliasThere(repaired));
        String staleImage = containerd.image(ContainerdHarness.K8S, "prom-stale", TestImages.DEBIAN_LIB,
                root -> Files.createSymbolicLink(root.resolve(TestImages.DEBIAN_LIB.substring(1)).resolve("libcuda.so.1"),
                        Path.of("libcuda.so.470.57.02")), "sleep", "600");
        gpuContainer(staleImage, List.of());
        await("the stale alias replaced", "driver_alias_links_replaced_total{library=\"libcuda.so.1\"} >= 1");
        // One whose image ships its own libcuda.so.1 (a build-time stub) that its loader cache lists first.
        String copyImage = containerd.image(ContainerdHarness.K8S, "prom-copy", TestImages.DEBIAN_LIB, root -> {
            io.driveralias.agent.testing.NativeLibraries.compile(root.resolve("usr/lib64"), "libcuda.so.1", "libcuda.so.1");
            io.driveralias.agent.testing.Processes.check(List.of("ldconfig", "-X", "-r", root.toString()));
        }, "sleep", "600");
        String copy = gpuContainer(copyImage, List.of());
        await("the image's own libcuda.so.1 said", "driver_alias_container_driver_mismatch{container_id=\"" + copy + "\"} == 1");
        String readOnly = gpuContainer(List.of("--read-only"));
        await("the read-only container unrepaired", "driver_alias_container_unrepaired{container_id=\"" + readOnly + "\"} == 1");
        await("a repair in the rate window", "increase(driver_alias_containers_total{outcome=\"repaired\"}[10m]) > 0");
        List<String> problems = new ArrayList<>();
        int queries = 0;
        for (String node : List.of("containerd-node", ".+")) {
            Map<String, String> variables = Map.of("node", node, "__rate_interval", "10m", "__interval", "1m", "__range", "1h",
                    "datasource", "prometheus");
            for (PromQueries.Query q : PromQueries.dashboard(RepoFiles.read(PromQueries.DASHBOARD))) {
                queries++;
                String expr = q.evaluable(variables);
                List<Sample> result = poll(expr);
                if (result.isEmpty()) {
                    problems.add(q.origin() + " (node " + node + "): no series\n    " + expr);
                } else if (result.stream().anyMatch(s -> !Double.isFinite(s.value()))) {
                    problems.add(q.origin() + " (node " + node + "): not a number: " + result + "\n    " + expr);
                }
            }
        }
        assertThat(problems).as("dashboard queries against a containerd-only agent").isEmpty();
        System.out.println("[containerd-prometheus] " + queries + " dashboard queries answered with series");
        containerd.remove(ContainerdHarness.K8S, readOnly);
        containers.remove(readOnly);
        await("the read-only container's series gone", "absent(driver_alias_container_unrepaired)");
    }

    /** containerd killed: the runtime-neutral alert fires for containerd, with its runbook; back, it resolves. */
    @Test
    @Order(3)
    void theDisconnectAlertFiresForContainerdWhileItIsDown() {
        try {
            containerd.kill();
            await("containerd down in Prometheus", "driver_alias_runtime_up{runtime=\"containerd\"} == 0");
            JsonNode alert = awaitAlert("DriverAliasRuntimeDisconnected", "firing");
            assertThat(alert.path("labels").path("runtime").asText()).isEqualTo("containerd");
            assertThat(alert.path("labels").path("node").asText()).isEqualTo("containerd-node");
            assertThat(alert.path("annotations").path("summary").asText()).endsWith("has lost containerd");
            assertThat(alert.path("annotations").path("runbook_url").asText()).endsWith("#driveraliasruntimedisconnected");
            assertThat(activeAlerts()).as("only the runtime alert: nothing about Docker")
                    .doesNotContain("DriverAliasDockerDisconnected").contains("DriverAliasRuntimeDisconnected");
            System.out.println("[containerd-prometheus] containerd killed: DriverAliasRuntimeDisconnected{runtime=containerd} firing");
        } finally {
            containerd.start();
        }
        await("containerd back in Prometheus", "driver_alias_runtime_up{runtime=\"containerd\"} == 1");
        AgentProcess.awaitTrue("the alert resolved", LONG, () -> !activeAlerts().contains("DriverAliasRuntimeDisconnected"));
    }

    private String gpuContainer(List<String> extra) {
        return gpuContainer(containerd.debianImage(ContainerdHarness.K8S), extra);
    }

    /** A running container of {@code image} with the real driver's files bound, as a GPU runtime binds them. */
    private String gpuContainer(String image, List<String> extra) {
        String id = "prom-" + UUID.randomUUID().toString().substring(0, 8);
        List<String> options = new ArrayList<>(CriProbes.ctrBinds());
        options.addAll(extra);
        containers.add(containerd.ctrRun(ContainerdHarness.K8S, options, image, id, "sleep", "600"));
        return id;
    }

    private boolean aliasThere(String id) {
        return containerd.exec(ContainerdHarness.K8S, id, "test", "-L", RealContainers.LIB_DIR + "/libcuda.so.1").exitCode() == 0;
    }

    private void await(String what, String expr) {
        prometheus.await(what, expr, r -> !r.isEmpty(), LONG, () -> prometheus.targetsSummary() + "\n" + agent.log());
    }

    /** A query that should answer, asked again for a while: a failed scrape empties everything for a second. */
    private List<Sample> poll(String expr) {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        List<Sample> result = prometheus.query(expr);
        while (result.isEmpty() && System.nanoTime() < deadline) {
            pause(500);
            result = prometheus.query(expr);
        }
        return result;
    }

    private Set<String> activeAlerts() {
        Set<String> active = new TreeSet<>();
        prometheus.get("/api/v1/alerts").path("data").path("alerts")
                .forEach(a -> active.add(a.path("labels").path("alertname").asText()));
        return active;
    }

    private JsonNode awaitAlert(String name, String state) {
        long deadline = System.nanoTime() + LONG.toNanos();
        while (true) {
            for (JsonNode alert : prometheus.get("/api/v1/alerts").path("data").path("alerts")) {
                if (alert.path("labels").path("alertname").asText().equals(name) && alert.path("state").asText().equals(state)) {
                    return alert;
                }
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("alert " + name + " not " + state + ": " + prometheus.get("/api/v1/alerts").path("data"));
            }
            pause(500);
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
}
