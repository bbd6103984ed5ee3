package io.driveralias.agent.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.core.FailureReason;
import io.driveralias.agent.core.PodRef;
import io.driveralias.agent.core.Printable;
import io.driveralias.agent.metrics.DesignMetrics;
import io.driveralias.agent.metrics.MicrometerRepairMetrics;
import io.driveralias.agent.metrics.Promtool;
import io.driveralias.agent.metrics.RepoFiles;
import io.driveralias.agent.metrics.ScrapedText;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The agent's real registry behind the real server, scraped over HTTP like Prometheus does. */
class MetricsScrapeTest {

    private static final ContainerRef CONTAINER = new ContainerRef("5d41402abc4b2a76b9719d911017c592", "k8s_cuda_job-7_batch_x_0",
            "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", Optional.of(new PodRef("batch", "job-7", "uid-7", "cuda")));

    private final FakeAgentStatus status = new FakeAgentStatus();
    private final HttpClient client = HttpClient.newHttpClient();
    private MicrometerRepairMetrics metrics;
    private AgentHttpServer server;

    @BeforeEach
    void start() throws IOException {
        metrics = MicrometerRepairMetrics.withProcessMetrics(MicrometerRepairMetrics.ADAPTED_RUNTIMES);
        server = new AgentHttpServer(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), metrics::scrape, status);
        server.start();
    }

    @AfterEach
    void stop() {
        server.close();
        metrics.close();
        client.close();
    }

    @Test
    void everyDesignMetricIsScrapedWithItsTypeAndPassesPromtool() throws Exception {
        metrics.containerExamined(ContainerOutcome.FAILED);
        metrics.containerExamined(ContainerOutcome.REPAIRED);
        metrics.linkCreated("libcuda.so.1");
        metrics.linkCreated("libnvidia-nvvm.so.4");
        metrics.linkReplaced("libnvidia-ml.so.1");
        metrics.repairFailed(FailureReason.READ_ONLY);
        metrics.unrepaired(CONTAINER, java.util.List.of(FailureReason.READ_ONLY));
        metrics.resyncInterval(Duration.ofSeconds(60));
        metrics.repairDuration(Duration.ofMillis(18));
        metrics.exposure(Duration.ZERO);
        metrics.runtimeConnected("docker", true);
        metrics.ownPodVisible(true);
        metrics.runtimeEvent("docker", "create");
        metrics.runtimeEvent("docker", "start");
        metrics.reconcileSucceeded(Instant.now());
        metrics.driverVersion("535.104.05");
        metrics.kubernetesEvent("sent");
        metrics.hostDriverFiles(() -> 14, () -> 0);
        metrics.hostDriverState(new io.driveralias.agent.core.HostDriverState(
                io.driveralias.agent.core.HostDriverState.State.MISMATCH, Optional.of("535.104.05"), Optional.of("535.183.01")));
        metrics.driverMismatch(CONTAINER, io.driveralias.agent.testing.DriverLoads.imageCopy());

        HttpResponse<String> response = scrape();

        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().firstValue("Content-Type")).hasValue("text/plain; version=0.0.4; charset=utf-8");
        ScrapedText scraped = ScrapedText.parse(response.body());
        assertThat(scraped.types()).containsAllEntriesOf(DesignMetrics.TYPES);
        assertThat(scraped.value("driver_alias_links_created_total", Map.of("library", "libnvidia-nvvm.so.4"))).isEqualTo(1);
        Promtool.Result lint = Promtool.run(RepoFiles.root(), response.body(), "check", "metrics");
        assertThat(lint.succeeded()).as("promtool check metrics:\n%s", lint.output()).isTrue();
        assertThat(lint.output()).as("promtool check metrics").isEmpty();
    }

    @Test
    void theContainerSeriesComesAndGoes() throws Exception {
        assertThat(ScrapedText.parse(scrape().body()).samples("driver_alias_container_unrepaired")).isEmpty();

        metrics.unrepaired(CONTAINER, java.util.List.of(FailureReason.READ_ONLY));

        ScrapedText broken = ScrapedText.parse(scrape().body());
        assertThat(broken.samples("driver_alias_container_unrepaired")).singleElement().satisfies(s -> assertThat(s.labels())
                .isEqualTo(Map.of("namespace", "batch", "pod", "job-7", "container", "cuda", "container_id", CONTAINER.id(),
                        "reason", "read_only")));
        assertThat(broken.value("driver_alias_unrepaired_containers", Map.of())).isEqualTo(1);

        metrics.resolved(CONTAINER.id());

        ScrapedText fixed = ScrapedText.parse(scrape().body());
        assertThat(fixed.samples("driver_alias_container_unrepaired")).isEmpty();
        assertThat(fixed.value("driver_alias_unrepaired_containers", Map.of())).isZero();
    }

    /**
     * Issue: ESC from a pod label reached {@code /metrics} raw. Every label value built from
     * container data carries no control character, line break or bidi override, in either
     * format, and the scrape still passes promtool.
     */
    @Test
    void labelValuesFromContainersCarryNoControlCharacters() throws Exception {
        String hostile = "a\u001b[31mred\u0007\u0000\u007f\u0085\u009b\r\n\u2028\u2029\u202e\u2066\tz";
        ContainerRef container = new ContainerRef("id-" + hostile, "/name-" + hostile, "img-" + hostile,
                Optional.of(new PodRef("ns-" + hostile, "pod-" + hostile, "uid", "ctr-" + hostile)));
        ContainerRef plain = new ContainerRef("cid-" + hostile, "/docker-" + hostile, "img-" + hostile, Optional.empty());
        metrics.unrepaired(container, java.util.List.of(FailureReason.CONFLICT));
        metrics.unrepaired(plain, java.util.List.of(FailureReason.IO));
        metrics.linkCreated("libcuda.so.1" + hostile);
        metrics.linkReplaced(hostile);
        metrics.runtimeEvent("docker", "start" + hostile);
        metrics.runtimeEvent("containerd" + hostile, "/tasks/create" + hostile);
        metrics.driverVersion("535.104.05" + hostile);

        for (String accept : java.util.List.of("text/plain", "application/openmetrics-text;version=1.0.0")) {
            String body = client.send(request("/metrics").header("Accept", accept).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
            for (int i = 0; i < body.length(); i++) {
                char c = body.charAt(i);
                assertThat(c == '\n' || !unsafe(c)).as("%s: U+%04X at %d in ...%s...", accept, (int) c, i,
                        Printable.of(body.substring(Math.max(0, i - 40), Math.min(body.length(), i + 10)))).isTrue();
            }
            assertThat(body).as(accept).contains("pod-a\\\\u001b[31mred");
        }
        ScrapedText scraped = ScrapedText.parse(scrape().body());
        for (ScrapedText.Sample sample : scraped.samples()) {
            sample.labels().values().forEach(v -> assertThat(v.chars().noneMatch(c -> unsafe((char) c)))
                    .as("%s %s", sample.name(), Printable.of(v)).isTrue());
        }
        assertThat(scraped.samples("driver_alias_container_unrepaired")).hasSize(2)
                .allSatisfy(s -> assertThat(s.labels().get("container_id")).contains("\\u001b"));
        Promtool.Result lint = Promtool.run(RepoFiles.root(), scrape().body(), "check", "metrics");
        assertThat(lint.succeeded()).as("promtool check metrics:\n%s", lint.output()).isTrue();
    }

    /** C0, DEL, C1, the Unicode line and paragraph separators, bidi embeddings, overrides and isolates. */
    private static boolean unsafe(char c) {
        return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == '\u2028' || c == '\u2029'
                || (c >= '\u202a' && c <= '\u202e') || (c >= '\u2066' && c <= '\u2069');
    }

    @Test
    void prometheusGetsOpenMetrics() throws Exception {
        HttpResponse<String> response = client.send(request("/metrics")
                .header("Accept", "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
                        + "text/plain;version=0.0.4;q=0.5,*/*;q=0.1").build(), HttpResponse.BodyHandlers.ofString());

        assertThat(response.headers().firstValue("Content-Type")).hasValue("application/openmetrics-text; version=1.0.0; charset=utf-8");
        assertThat(response.body()).contains("# TYPE driver_alias_containers counter\n").endsWith("# EOF\n");
    }

    @Test
    void probesFollowTheAgentStatus() throws Exception {
        status.alive = true;
        status.ready = false;
        assertThat(get("/healthz").statusCode()).isEqualTo(200);
        assertThat(get("/readyz").statusCode()).isEqualTo(503);

        status.ready = true;
        assertThat(get("/readyz").statusCode()).isEqualTo(200);

        status.alive = false;
        status.ready = false;
        assertThat(get("/healthz").statusCode()).isEqualTo(503);
        assertThat(get("/readyz").statusCode()).isEqualTo(503);
    }

    private HttpResponse<String> scrape() throws IOException, InterruptedException {
        return get("/metrics");
    }

    private HttpResponse<String> get(String path) throws IOException, InterruptedException {
        return client.send(request(path).build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpRequest.Builder request(String path) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path)).timeout(Duration.ofSeconds(10));
    }
}
