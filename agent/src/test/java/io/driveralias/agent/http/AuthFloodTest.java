package io.driveralias.agent.http;

import static org.assertj.core.api.Assertions.assertThat;

import at.favre.lib.crypto.bcrypt.BCrypt;
import io.driveralias.agent.config.ConfigException;
import io.driveralias.agent.metrics.PrometheusScrape;
import io.driveralias.agent.testing.TestCertificates;
import io.driveralias.agent.webconfig.WebSecurity;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 23: with basic auth on, 16 addresses x 64 connections looping on wrong passwords closed
 * 21 of 30 {@code /healthz} probes unanswered and failed 10 of 12 authenticated scrapes. Under
 * such floods, over plain HTTP and over TLS (full handshakes with wrong passwords, and
 * handshakes that never finish), the server as the agent builds it (a real web configuration
 * file, a real bcrypt hash at cost 10) answers every probe within a second and every scrape of
 * a client whose login it knows, and still lets a new login in. The probes come once a second
 * each, the kubelet's shortest period; the flood runs in a JVM of its own ({@link PortFlood}).
 */
@Timeout(180)
class AuthFloodTest {

    static final int ADDRESSES = 16;
    static final int PER_ADDRESS = 64;
    static final String KUBELET = "127.0.0.100";
    static final String PROMETHEUS = "127.0.0.200";

    @TempDir
    static Path dir;
    private static TestCertificates certs;
    private static String users;

    private final FakeAgentStatus status = new FakeAgentStatus();
    private AgentHttpServer server;

    @BeforeAll
    static void setUp() {
        certs = TestCertificates.create(dir);
        users = """
                basic_auth_users:
                  prometheus: '%s'
                  grafana: '%s'
                """.formatted(BCrypt.with(BCrypt.Version.VERSION_2Y).hashToString(10, "s3cret".toCharArray()),
                BCrypt.with(BCrypt.Version.VERSION_2Y).hashToString(10, "gr4fana".toCharArray()));
    }

    @AfterEach
    void stop() {
        if (server != null) {
            server.close();
        }
    }

    @Test
    void wrongPasswordsOverPlainHttp() throws Exception {
        start(users);
        floodAndProbe(PortFlood.Kind.WRONG_PASSWORDS, null);
    }

    @Test
    void fullTlsHandshakesWithWrongPasswords() throws Exception {
        start("tls_server_config: {cert_file: server.crt, key_file: server.key}\n" + users);
        floodAndProbe(PortFlood.Kind.TLS_WRONG_PASSWORDS, certs.clientContext(null));
    }

    @Test
    void tlsHandshakesThatNeverFinish() throws Exception {
        start("tls_server_config: {cert_file: server.crt, key_file: server.key}\n" + users);
        floodAndProbe(PortFlood.Kind.TLS_STALLED_HANDSHAKES, certs.clientContext(null));
    }

    /**
     * Every slot held by a connection whose password is being checked (bcrypt at cost 14, about
     * a second each, one at a time): a probe still gets in, by evicting one of them.
     */
    @Test
    void connectionsWaitingForTheirPasswordCheckAreEvictedForAProbe() throws Exception {
        status.alive = true;
        String slow = BCrypt.with(BCrypt.Version.VERSION_2Y).hashToString(14, "s3cret".toCharArray());
        Path config = Files.writeString(dir.resolve("slow.yml"), "basic_auth_users: {prometheus: '" + slow + "'}\n");
        server = new AgentHttpServer(new InetSocketAddress("0.0.0.0", 0), accept -> new PrometheusScrape("text/plain", new byte[0]),
                status, new AgentHttpServer.Limits(4, Duration.ofSeconds(10), Duration.ofSeconds(30), 8192, 4),
                WebSecurity.load(Optional.of(config.toString())));
        server.start();
        List<Socket> guessing = new ArrayList<>();
        try {
            for (int a = 1; a <= 4; a++) {
                Socket s = new Socket(InetAddress.getLoopbackAddress(), server.port(), InetAddress.getByName("127.0.1." + a), 0);
                guessing.add(s);
                s.getOutputStream().write(("GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: " + TestCertificates.basic("prometheus", "guess")
                        + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            }
            Thread.sleep(300); // all four are being checked, or waiting for their turn
            PortProbes.Answer probe = new PortProbes(server.port(), null).get(KUBELET, "/healthz", null, 5000);
            assertThat(probe.status()).isEqualTo(200);
            assertThat(Duration.ofNanos(probe.nanos())).isLessThan(Duration.ofSeconds(1));
        } finally {
            for (Socket s : guessing) {
                s.close();
            }
        }
    }

    /**
     * Prometheus logs in before the flood; during it, 30 rounds of {@code /healthz} and
     * {@code /readyz} from the kubelet's address, 12 scrapes from Prometheus' and one first
     * login of another user.
     */
    private void floodAndProbe(PortFlood.Kind kind, SSLContext tls) throws Exception {
        status.alive = true;
        status.ready = true;
        PortProbes clients = new PortProbes(server.port(), tls);
        String prometheus = TestCertificates.basic("prometheus", "s3cret");
        PortProbes others = new PortProbes(server.port(), tls);
        assertThat(others.get(PROMETHEUS, "/metrics", prometheus, 10_000).status()).as("login before the flood").isEqualTo(200);
        PortProbes.Answer newLogin;
        PortFlood.Launched flood = PortFlood.launch(server.port(), kind, ADDRESSES, PER_ADDRESS);
        try (flood) {
            for (int i = 0; i < 30; i++) {
                long round = System.nanoTime();
                clients.get(KUBELET, "/healthz", null, 5000);
                clients.get(KUBELET, "/readyz", null, 5000);
                if (i % 5 == 0 || i % 5 == 2) {
                    clients.get(PROMETHEUS, "/metrics", prometheus, 10_000);
                }
                Thread.sleep(Math.max(0, 1000 - (System.nanoTime() - round) / 1_000_000)); // the kubelet's shortest period
            }
            // Prometheus' scrape timeout: a login the server has not seen gets its bcrypt turn in time.
            newLogin = others.get("127.0.0.201", "/metrics", TestCertificates.basic("grafana", "gr4fana"), 10_000);
        }
        System.out.printf("%s flood, %d addresses x %d connections, how they ended: %s%n  load average %s%n  %s%n  %s%n  %s%n"
                + "  a new login during the flood: %d in %.1f ms%n", kind, ADDRESSES, PER_ADDRESS, flood.outcomes(),
                Files.readString(Path.of("/proc/loadavg")).trim(), clients.summary("/healthz"), clients.summary("/readyz"),
                clients.summary("/metrics"), newLogin.status(), newLogin.millis());
        for (String probe : new String[] {"/healthz", "/readyz"}) {
            assertThat(clients.answers(probe)).as(clients.summary(probe)).hasSize(30)
                    .allSatisfy(a -> {
                        assertThat(a.status()).isEqualTo(200);
                        assertThat(Duration.ofNanos(a.nanos())).isLessThan(Duration.ofSeconds(1));
                    });
        }
        assertThat(clients.answers("/metrics")).as(clients.summary("/metrics")).hasSize(12)
                .allSatisfy(a -> assertThat(a.status()).isEqualTo(200));
        assertThat(newLogin.status()).as("a first login during the flood").isEqualTo(200);
        assertThat(server.heldSlots()).isLessThanOrEqualTo(AgentHttpServer.Limits.DEFAULT.maxConnections());
    }

    private void start(String yaml) throws IOException, ConfigException {
        Path config = Files.writeString(dir.resolve("web-" + System.nanoTime() + ".yml"), yaml);
        WebSecurity security = WebSecurity.load(Optional.of(config.toString()));
        server = new AgentHttpServer(new InetSocketAddress("0.0.0.0", 0),
                accept -> new PrometheusScrape("text/plain", "up_test 1\n".getBytes(StandardCharsets.UTF_8)), status, security);
        server.start();
    }
}
