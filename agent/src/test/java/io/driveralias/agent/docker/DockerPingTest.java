package io.driveralias.agent.docker;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.Timing;
import java.net.StandardProtocolFamily;
import java.net.URI;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Timing
class DockerPingTest {

    @TempDir
    Path dir;

    private ServerSocketChannel listen(Path socket) throws Exception {
        ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(socket));
        return server;
    }

    @Test
    void aDaemonThatAcceptsButNeverAnswersFailsTheDeadline() throws Exception {
        Path socket = dir.resolve("frozen.sock");
        // A SIGSTOPped dockerd: the kernel completes connections into its backlog; nobody reads.
        try (ServerSocketChannel frozen = listen(socket)) {
            long start = System.nanoTime();
            boolean up = DockerPing.ping(URI.create("unix://" + socket), Duration.ofMillis(300));
            long took = (System.nanoTime() - start) / 1_000_000;

            assertThat(up).isFalse();
            assertThat(took).isBetween(250L, 2_000L);
        }
    }

    @Test
    void aDaemonThatAnswersIsUp() throws Exception {
        Path socket = dir.resolve("docker.sock");
        try (ServerSocketChannel server = listen(socket)) {
            Thread answer = Thread.ofVirtual().start(() -> {
                try (SocketChannel c = server.accept()) {
                    c.read(ByteBuffer.allocate(256));
                    c.write(ByteBuffer.wrap("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK"
                            .getBytes(StandardCharsets.US_ASCII)));
                } catch (Exception ignored) {
                    // the test fails on the ping's answer
                }
            });
            assertThat(DockerPing.ping(URI.create("unix://" + socket), Duration.ofSeconds(2))).isTrue();
            answer.join();
        }
    }

    @Test
    void noDaemonIsDownAtOnce() {
        long start = System.nanoTime();
        assertThat(DockerPing.ping(URI.create("unix://" + dir.resolve("none.sock")), Duration.ofSeconds(2))).isFalse();
        assertThat(DockerPing.ping(URI.create("tcp://127.0.0.1:1"), Duration.ofSeconds(2))).isFalse();
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(1));
    }
}
