package io.driveralias.agent.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.driveralias.agent.testing.PrometheusServer;
import io.driveralias.agent.testing.PrometheusServer.Sample;
import io.driveralias.agent.testing.ServiceMonitorScrape;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The shipped ServiceMonitor, turned into the scrape job the Prometheus Operator would make of it
 * and run by a real Prometheus, attributes an unrepaired container to that container's namespace,
 * pod and container, not to the agent's own pod. A fixed /metrics page stands in for the agent
 * (PrometheusScrapeIT does the same with the real agent); the control shows the test would see a
 * ServiceMonitor without honorLabels.
 */
@Timeout(120)
class ServiceMonitorAttributionTest {

    private static final String SERVICE_MONITOR = "k8s/overlays/prometheus-operator/servicemonitor.yaml";
    private static final String PAGE = """
            # TYPE driver_alias_container_unrepaired gauge
            driver_alias_container_unrepaired{namespace="ml",pod="train-0",container="cuda",container_id="0123abcd",reason="conflict"} 1
            # TYPE driver_alias_docker_up gauge
            driver_alias_docker_up 1
            """;
    private static final ServiceMonitorScrape.DiscoveredPod AGENT = new ServiceMonitorScrape.DiscoveredPod(
            "driver-alias", "driver-alias-agent",
            Map.of("app.kubernetes.io/name", "driver-alias-agent", "app.kubernetes.io/part-of", "driver-alias-agent"),
            "driver-alias-agent-x7k2p", "agent", "gpu-node-3", "metrics");

    private HttpServer agent;
    private PrometheusServer prometheus;

    @BeforeEach
    void serveTheFixedPage() throws Exception {
        agent = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        agent.createContext("/metrics", exchange -> {
            byte[] body = PAGE.getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        agent.start();
    }

    @AfterEach
    void stop() {
        if (prometheus != null) {
            prometheus.close();
        }
        agent.stop(0);
    }

    private List<Sample> scrapeWith(String serviceMonitorYaml, String expr) {
        String target = "127.0.0.1:" + agent.getAddress().getPort();
        prometheus = PrometheusServer.start(new PrometheusServer.Config(
                ServiceMonitorScrape.translate(serviceMonitorYaml, target, AGENT), Duration.ofMillis(500), List.of()));
        return prometheus.await(expr, expr, s -> !s.isEmpty(), Duration.ofSeconds(60), prometheus::targetsSummary);
    }

    @Test
    void theUnrepairedSeriesNamesTheBrokenContainerAndTheNodeAndTheReason() {
        List<Sample> series = scrapeWith(RepoFiles.read(SERVICE_MONITOR), "driver_alias_container_unrepaired");

        assertThat(series).singleElement().satisfies(s -> {
            assertThat(s.labels()).containsEntry("namespace", "ml").containsEntry("pod", "train-0")
                    .containsEntry("container", "cuda").containsEntry("container_id", "0123abcd")
                    .containsEntry("reason", "conflict").containsEntry("node", "gpu-node-3")
                    .containsEntry("job", "driver-alias-agent");
            assertThat(s.labels().keySet()).noneMatch(k -> k.startsWith("exported_"));
        });
        // A series the agent does not label itself gets the agent pod's labels from the target.
        assertThat(prometheus.query("driver_alias_docker_up")).singleElement().satisfies(s ->
                assertThat(s.labels()).containsEntry("namespace", "driver-alias")
                        .containsEntry("pod", "driver-alias-agent-x7k2p").containsEntry("node", "gpu-node-3"));
    }

    /** The regression this guards against: without honorLabels the agent's pod wins. */
    @Test
    void withoutHonorLabelsTheAgentsPodWouldBeBlamed() {
        String shipped = RepoFiles.read(SERVICE_MONITOR);
        assertThat(shipped).contains("honorLabels: true");

        List<Sample> series = scrapeWith(shipped.replace("honorLabels: true", "honorLabels: false"),
                "driver_alias_container_unrepaired");

        assertThat(series).singleElement().satisfies(s -> assertThat(s.labels())
                .containsEntry("pod", "driver-alias-agent-x7k2p").containsEntry("exported_pod", "train-0"));
    }
}
