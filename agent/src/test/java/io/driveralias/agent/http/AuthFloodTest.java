package io.driveralias.agent.http;

import static org.assertj.core.api.Assertions.assertThat;

import at.favre.lib.crypto.bcrypt.BCrypt;
import io.driveralias.agent.metrics.PrometheusScrape;
import io.driveralias.agent.testing.TestCertificates;
import io.driveralias.agent.testing.Timing;
import io.driveralias.agent.webconfig.WebSecurity;
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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 23: with basic auth on, 16 addresses x 64 connections looping on wrong passwords closed
 * 21 of 30 {@code /healthz} probes unanswered: a connection was marked as being answered before
 * its credentials were checked. Here the server as the agent builds it, every slot held by a
 * password check, still answers a probe. The floods themselves (plain HTTP, full TLS handshakes,
 * handshakes that never finish) run against the packaged agent in {@code AuthFloodIT}.
 */
@Timeout(60)
@Timing
class AuthFloodTest {

    static final String KUBELET = "127.0.0.100";

    @TempDir
    static Path dir;

    private final FakeAgentStatus status = new FakeAgentStatus();
    private AgentHttpServer server;

    @AfterEach
    void stop() {
        if (server != null) {
            server.close();
        }
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
}
