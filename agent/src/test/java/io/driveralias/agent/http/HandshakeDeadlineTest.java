package io.driveralias.agent.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.Timing;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.SSLEngine;
import org.junit.jupiter.api.Test;

/**
 * A TLS handshake ends at its deadline ({@link TlsStart#HANDSHAKE_DEADLINE}, 5 s) whatever the
 * client sends: a read timeout bounds each read, and a client that sent its ClientHello and then a
 * byte of its next record a second once kept its handshake, and the turn it holds, past 9 s.
 */
@Timing
class HandshakeDeadlineTest extends TlsPortTest {

    @Test
    void aHandshakeDribbledByteByByteEndsAtItsDeadline() throws Exception {
        start("tls_server_config: {cert_file: server.crt, key_file: server.key}\n");
        SSLEngine engine = certs.clientContext(null).createSSLEngine("localhost", server.port());
        engine.setUseClientMode(true);
        ByteBuffer hello = ByteBuffer.allocate(engine.getSession().getPacketBufferSize());
        engine.wrap(ByteBuffer.allocate(0), hello);
        hello.flip();

        long start = System.nanoTime();
        AtomicLong closedAt = new AtomicLong();
        try (Socket s = new Socket(InetAddress.getByName("127.0.0.1"), server.port(), InetAddress.getByName("127.0.13.1"), 0)) {
            OutputStream out = s.getOutputStream();
            out.write(hello.array(), 0, hello.limit());
            InputStream in = s.getInputStream();
            Thread reader = Thread.ofVirtual().start(() -> {
                try {
                    in.transferTo(OutputStream.nullOutputStream()); // the server's flight, then its end
                } catch (IOException reset) {
                    // ended all the same
                }
                closedAt.set(System.nanoTime());
            });
            byte[] record = {0x16, 0x03, 0x03, 0x40, 0x00}; // a handshake record of 16 KiB, then its body, a byte at a time
            for (int i = 0; closedAt.get() == 0 && System.nanoTime() - start < Duration.ofSeconds(9).toNanos(); i++) {
                try {
                    out.write(i < record.length ? record[i] : 0);
                } catch (IOException closed) {
                    break;
                }
                Thread.sleep(1000);
            }
            s.close();
            reader.join();
        }
        long held = Math.max(closedAt.get() - start, 0);
        System.out.printf("the dribbled handshake ended after %.1f s (9 s: the client gave up first)%n", held / 1e9);
        assertThat(Duration.ofNanos(held)).as("how long the server held the handshake")
                .isLessThan(TlsStart.HANDSHAKE_DEADLINE.plusMillis(1500));
    }
}
