package io.driveralias.agent.http;

import static org.assertj.core.api.Assertions.assertThat;

import at.favre.lib.crypto.bcrypt.BCrypt;
import io.driveralias.agent.metrics.PrometheusScrape;
import io.driveralias.agent.testing.TestCertificates;
import io.driveralias.agent.webconfig.WebSecurity;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Red team: a TLS 1.2 client renegotiates on its established connection while the server reads
 * its request head. Every renegotiation is a full handshake (the server's signature and key
 * exchange) done outside {@link HandshakeTurns}: the turns bound an address to
 * {@value HandshakeTurns#PER_SECOND} handshakes a second ({@value HandshakeTurns#BURST} at once),
 * and TLS state is promised only in a turn.
 */
class TlsRenegotiationTest {

    @TempDir
    static Path dir;
    private static TestCertificates certs;
    private AgentHttpServer server;

    @BeforeAll
    static void certificates() {
        certs = TestCertificates.create(dir);
    }

    @AfterEach
    void stop() {
        if (server != null) {
            server.close();
        }
    }

    @Test
    void oneConnectionCannotHandshakeMoreOftenThanItsAddressMay() throws Exception {
        String hash = BCrypt.with(BCrypt.Version.VERSION_2Y).hashToString(4, "s3cret".toCharArray());
        Path config = Files.writeString(dir.resolve("web.yml"),
                "tls_server_config: {cert_file: server.crt, key_file: server.key}\nbasic_auth_users: {p: '" + hash + "'}\n");
        WebSecurity security;
        try {
            security = WebSecurity.load(Optional.of(config.toString()));
        } catch (io.driveralias.agent.config.ConfigException e) {
            throw new AssertionError(e);
        }
        server = new AgentHttpServer(new InetSocketAddress("127.0.0.1", 0),
                accept -> new PrometheusScrape("text/plain", "up_test 1\n".getBytes(StandardCharsets.UTF_8)), new FakeAgentStatus(), security);
        server.start();

        Socket raw = new Socket(InetAddress.getByName("127.0.0.1"), server.port(), InetAddress.getByName("127.0.8.1"), 0);
        AtomicInteger handshakes = new AtomicInteger();
        try (SSLSocket ssl = (SSLSocket) certs.clientContext(null).getSocketFactory().createSocket(raw, "localhost", server.port(), true)) {
            ssl.setEnabledProtocols(new String[] {"TLSv1.2"});
            ssl.addHandshakeCompletedListener(e -> handshakes.incrementAndGet());
            ssl.startHandshake();
            ssl.setSoTimeout(30);
            long end = System.nanoTime() + 3_000_000_000L;
            while (System.nanoTime() < end) {
                ssl.getSession().invalidate(); // a full handshake each time, not a resumption
                ssl.startHandshake();
                try {
                    ssl.getInputStream().read(); // drives the renegotiation; the server sends nothing else
                } catch (SocketTimeoutException expected) {
                    // the server is still waiting for our request head
                } catch (javax.net.ssl.SSLException refused) {
                    break; // the server refused the renegotiation and ended the connection
                }
            }
        }
        System.out.printf("full TLS handshakes on one connection in 3 s: %d%n", handshakes.get());
        // The address may start BURST at once, then PER_SECOND a second: 8 + 3 x 4 = 20 in 3 s at the most.
        assertThat(handshakes.get()).as("handshakes one connection got in 3 s")
                .isLessThanOrEqualTo(HandshakeTurns.BURST + 3 * HandshakeTurns.PER_SECOND);
    }
}
