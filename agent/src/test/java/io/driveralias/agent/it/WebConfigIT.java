package io.driveralias.agent.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import at.favre.lib.crypto.bcrypt.BCrypt;
import io.driveralias.agent.bench.RepairBenchmark;
import io.driveralias.agent.metrics.RepoFiles;
import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.PodCgroup;
import io.driveralias.agent.testing.PrometheusServer;
import io.driveralias.agent.testing.PrometheusServer.Sample;
import io.driveralias.agent.testing.ServiceMonitorScrape;
import io.driveralias.agent.testing.TestCertificates;
import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The packaged agent, with the DaemonSet's JVM options, serving its metrics port under a
 * {@code --web-config-file} (TLS, a client certificate required and verified, basic auth), and
 * a real Prometheus scraping it as a Prometheus configured for it would ({@code scheme: https},
 * {@code tls_config} with a client certificate, {@code basic_auth}). Clients without
 * credentials, with a wrong password, without a certificate, or speaking plain HTTP are refused.
 * No Docker is needed: the port is served while Docker is unreachable. In order: the scrapes
 * are measured before the floods. The agent runs in a CPU cgroup of its own, as its pod does
 * ({@link PodCgroup}): its port serves at nice 10, and with a busy loop on each core beside two
 * IT classes, outside one, the first probe after 1,024 connections were taken in took 1,382 ms.
 */
@Timeout(180)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class WebConfigIT {

    private static final String JOB = "driver-alias-agent";
    /**
     * The shipped ServiceMonitor's {@code scrapeTimeout} (Prometheus' own default too), as this
     * Prometheus' timeout and interval: what an operator's scrape must fit in. A 2 s timeout, once
     * taken here for speed, was missed by one TLS scrape of five (2,006 ms, average 612 ms) with a
     * busy loop on each core beside two IT classes, the agent then outside a cgroup of its own
     * (with one, and the busy loops: average 92 ms, worst 315 ms).
     */
    private static final Duration SCRAPE = ServiceMonitorScrape.scrapeTimeout(
            RepoFiles.read("k8s/overlays/prometheus-operator/servicemonitor.yaml"));
    /** Five scrapes' worth of Prometheus' time, as a range selector. */
    private static final String FIVE_SCRAPES = "[" + 5 * SCRAPE.toSeconds() + "s]";

    @TempDir
    static Path dir;
    private TestCertificates certs;
    private AgentProcess agent;
    private PodCgroup agentPod;
    private PrometheusServer prometheus;

    @BeforeAll
    void start() throws IOException {
        certs = TestCertificates.create(dir);
        String hash = BCrypt.with(BCrypt.Version.VERSION_2Y).hashToString(10, "s3cret".toCharArray());
        Path config = Files.writeString(dir.resolve("web.yml"), """
                tls_server_config:
                  cert_file: server.crt
                  key_file: server.key
                  client_auth_type: RequireAndVerifyClientCert
                  client_ca_file: ca.crt
                basic_auth_users:
                  prometheus: '%s'
                """.formatted(hash));
        int port = AgentProcess.freePort();
        agent = AgentProcess.start(command(port, "--web-config-file", config.toString()), port);
        agentPod = PodCgroup.create("daa-web-config-agent-" + agent.pid()).add(agent.pid());
        agent.awaitLog("listening on .* \\(HTTPS, basic authentication except /healthz and /readyz\\)", Duration.ofSeconds(60));
        PrometheusServer.ScrapeJob job = PrometheusServer.ScrapeJob.plain(JOB, "127.0.0.1:" + port, Map.of(), false)
                .with(Map.of(
                        "scheme", "https",
                        "tls_config", Map.of("ca_file", certs.path("ca.crt").toString(),
                                "cert_file", certs.path("client.crt").toString(),
                                "key_file", certs.path("client.key").toString()),
                        "basic_auth", Map.of("username", "prometheus", "password", "s3cret")));
        prometheus = PrometheusServer.start(new PrometheusServer.Config(job, SCRAPE, List.of()));
    }

    @AfterAll
    void stop() {
        if (agent != null) {
            agent.close();
        }
        if (agentPod != null) {
            agentPod.close();
        }
        if (prometheus != null) {
            prometheus.close();
        }
    }

    @Test
    @Order(1)
    void prometheusScrapesOverTlsWithAClientCertificateAndBasicAuth() {
        prometheus.await("Prometheus to scrape the agent over TLS", "up{job=\"" + JOB + "\"} == 1", s -> !s.isEmpty(),
                Duration.ofSeconds(60), () -> prometheus.targetsSummary() + agent.log());
        List<Sample> info = prometheus.await("the agent's own metrics", "driver_alias_build_info", s -> !s.isEmpty(),
                Duration.ofSeconds(30), prometheus::targetsSummary);
        assertThat(info.getFirst().label("version")).isNotEmpty();
        // Then, the agent's JIT warm, five scrapes in a row succeed.
        prometheus.await("five more scrapes", "count_over_time(up{job=\"" + JOB + "\"}" + FIVE_SCRAPES + ") >= 5", s -> !s.isEmpty(),
                SCRAPE.multipliedBy(8), prometheus::targetsSummary);
        double worst = prometheus.value("max_over_time(scrape_duration_seconds{job=\"" + JOB + "\"}" + FIVE_SCRAPES + ")");
        double average = prometheus.value("avg_over_time(scrape_duration_seconds{job=\"" + JOB + "\"}" + FIVE_SCRAPES + ")");
        System.out.printf("Prometheus' TLS + client certificate + basic auth scrapes of the agent (Xmx32m): average %.1f ms,"
                + " worst %.1f ms of the last 5%n", average * 1000, worst * 1000);
        assertThat(prometheus.value("min_over_time(up{job=\"" + JOB + "\"}" + FIVE_SCRAPES + ")")).isEqualTo(1.0);
    }

    @Test
    @Order(2)
    void clientsWithoutTheRightCredentialsAreRefused() throws Exception {
        HttpClient withCertificate = certs.client("client");
        assertThat(get(withCertificate, "/metrics", null).statusCode()).isEqualTo(401);
        assertThat(get(withCertificate, "/metrics", TestCertificates.basic("prometheus", "guess")).statusCode()).isEqualTo(401);
        HttpResponse<String> allowed = get(withCertificate, "/metrics", TestCertificates.basic("prometheus", "s3cret"));
        assertThat(allowed.statusCode()).isEqualTo(200);
        assertThat(allowed.body()).contains("driver_alias_build_info");
        assertThat(get(withCertificate, "/healthz", null).statusCode()).as("probes need no password").isEqualTo(200);

        assertThatThrownBy(() -> get(certs.client(null), "/metrics", TestCertificates.basic("prometheus", "s3cret")))
                .as("no client certificate: refused at the handshake").isInstanceOf(IOException.class);
        assertThatThrownBy(() -> get(certs.client("stranger"), "/metrics", TestCertificates.basic("prometheus", "s3cret")))
                .as("a certificate of another CA").isInstanceOf(IOException.class);

        try (Socket plain = new Socket(InetAddress.getLoopbackAddress(), agent.port())) {
            plain.setSoTimeout(5000);
            plain.getOutputStream().write("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            byte[] answer;
            try {
                answer = plain.getInputStream().readNBytes(5);
            } catch (java.net.SocketException reset) {
                answer = new byte[0];
            }
            assertThat(new String(answer, StandardCharsets.ISO_8859_1)).as("plain HTTP to the TLS port").doesNotStartWith("HTTP/");
        }
    }

    /** The DaemonSet's 32 MiB heap, TLS on, and 16 addresses holding 64 idle connections each: the probes answer. */
    @Test
    @Order(3)
    void probesAnswerOverTlsWhile16AddressesHold64IdleConnectionsEach() throws Exception {
        List<Socket> idle = new ArrayList<>();
        try {
            for (int a = 1; a <= 16; a++) {
                for (int i = 0; i < 64; i++) {
                    idle.add(new Socket(InetAddress.getLoopbackAddress(), agent.port(), InetAddress.getByName("127.0.3." + a), 0));
                }
            }
            HttpClient client = certs.client("client");
            long worst = 0;
            List<Long> each = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                long start = System.nanoTime();
                assertThat(get(client, "/healthz", null).statusCode()).isEqualTo(200);
                each.add((System.nanoTime() - start) / 1_000_000);
                worst = Math.max(worst, System.nanoTime() - start);
            }
            System.out.printf("the packaged agent (Xmx32m, TLS): /healthz while 16 x 64 idle connections are held:"
                    + " worst of 20 %.1f ms (each, ms: %s)%n", worst / 1e6, each);
            assertThat(Duration.ofNanos(worst)).isLessThan(Duration.ofSeconds(1));
            assertThat(agent.isAlive()).isTrue();
        } finally {
            for (Socket s : idle) {
                s.close();
            }
        }
    }

    /**
     * 1,024 connections that send a ClientHello and never finish the handshake: each holds
     * handshake state in the agent's 32 MiB heap until it is evicted or cut at the head
     * deadline. The agent stays up and its probes answer.
     */
    @Test
    @Order(4)
    void stalledHandshakesDoNotExhaustTheHeap() throws Exception {
        javax.net.ssl.SSLEngine engine = certs.clientContext("client").createSSLEngine("127.0.0.1", agent.port());
        engine.setUseClientMode(true);
        java.nio.ByteBuffer hello = java.nio.ByteBuffer.allocate(engine.getSession().getPacketBufferSize());
        engine.wrap(java.nio.ByteBuffer.allocate(0), hello);
        byte[] clientHello = java.util.Arrays.copyOf(hello.array(), hello.position());
        List<Socket> stalled = new ArrayList<>();
        try {
            for (int a = 1; a <= 16; a++) {
                for (int i = 0; i < 64; i++) {
                    Socket s = new Socket(InetAddress.getLoopbackAddress(), agent.port(), InetAddress.getByName("127.0.2." + a), 0);
                    s.getOutputStream().write(clientHello);
                    stalled.add(s);
                }
            }
            HttpClient client = certs.client("client");
            long worst = 0;
            for (int i = 0; i < 10; i++) {
                long start = System.nanoTime();
                assertThat(get(client, "/healthz", null).statusCode()).isEqualTo(200);
                worst = Math.max(worst, System.nanoTime() - start);
            }
            System.out.printf("the packaged agent (Xmx32m, TLS): /healthz while 1,024 handshakes stall: worst of 10 %.1f ms%n",
                    worst / 1e6);
            assertThat(Duration.ofNanos(worst)).isLessThan(Duration.ofSeconds(1));
            assertThat(agent.isAlive()).isTrue();
            assertThat(agent.log()).doesNotContain("OutOfMemoryError");
        } finally {
            for (Socket s : stalled) {
                s.close();
            }
        }
    }

    @Test
    @Order(5)
    void aBadWebConfigurationStopsTheAgentWithExit2AndNamesTheField() throws Exception {
        Path bad = Files.writeString(dir.resolve("bad.yml"),
                "tls_server_config: {cert_file: server.crt, key_file: server.key, client_auth_type: Mutual}\n");
        int port = AgentProcess.freePort();
        try (AgentProcess refused = AgentProcess.start(command(port, "--web-config-file", bad.toString()), port)) {
            AgentProcess.awaitTrue("the agent to exit", Duration.ofSeconds(60), () -> !refused.isAlive());
            assertThat(refused.stop()).isEqualTo(2);
            assertThat(refused.log()).contains("--web-config-file " + bad + ": tls_server_config.client_auth_type must be one of");
        }
    }

    /** The agent as the DaemonSet runs it, but on a Docker socket that is not there. */
    private List<String> command(int port, String... extra) {
        List<String> cmd = new ArrayList<>(List.of(AgentProcess.java()));
        cmd.addAll(List.of(RepairBenchmark.daemonSetJvmOptions().trim().split("\\s+")));
        cmd.addAll(List.of("-jar", AgentProcess.jar().toString(), "run", "--listen", "127.0.0.1:" + port,
                "--docker-host", "unix://" + dir.resolve("no-docker.sock"), "--kubernetes", "off"));
        cmd.addAll(List.of(extra));
        return cmd;
    }

    private HttpResponse<String> get(HttpClient client, String path, String authorization) throws IOException, InterruptedException {
        return TestCertificates.get(client, agent.port(), path, authorization);
    }
}
