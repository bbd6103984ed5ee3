package io.driveralias.agent.http;

import static org.assertj.core.api.Assertions.assertThat;

import at.favre.lib.crypto.bcrypt.BCrypt;
import io.driveralias.agent.testing.Timing;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.Test;

/**
 * A TLS 1.2 client may not renegotiate on its established connection: every renegotiation is a
 * full handshake (the server's signature and key exchange) outside {@link HandshakeTurns}, which
 * bound an address to {@value HandshakeTurns#PER_SECOND} handshakes a second
 * ({@value HandshakeTurns#BURST} at once); one connection once got 34 in 3 s.
 */
@Timing
class TlsRenegotiationTest extends TlsPortTest {

    @Test
    void oneConnectionCannotHandshakeMoreOftenThanItsAddressMay() throws Exception {
        String hash = BCrypt.with(BCrypt.Version.VERSION_2Y).hashToString(4, "s3cret".toCharArray());
        start("tls_server_config: {cert_file: server.crt, key_file: server.key}\nbasic_auth_users: {p: '" + hash + "'}\n");

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
