package io.driveralias.agent.containerd;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SocketProbeTest {

    private static final Duration TIMEOUT = Duration.ofMillis(500);

    /** A one-connection server on a Unix socket: reads what comes, answers {@code answer} (null: nothing), closes. */
    private static CompletableFuture<Void> serveOnce(Path socket, byte[] answer, boolean hang) throws IOException {
        ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(socket));
        return CompletableFuture.runAsync(() -> {
            try (server; SocketChannel client = server.accept()) {
                client.read(ByteBuffer.allocate(64));
                if (answer != null) {
                    client.write(ByteBuffer.wrap(answer));
                }
                if (hang) {
                    Thread.sleep(TIMEOUT.toMillis() * 3);
                }
            } catch (IOException | InterruptedException e) {
                // the probe went away
            }
        });
    }

    @Test
    void anHttp1ServerIsTold(@TempDir Path dir) throws Exception {
        Path socket = dir.resolve("docker.sock");
        CompletableFuture<Void> server = serveOnce(socket,
                "HTTP/1.1 301 Moved Permanently\r\nLocation: /%2A\r\nConnection: close\r\n\r\n".getBytes(StandardCharsets.US_ASCII),
                false);
        assertThat(SocketProbe.answersHttp1(socket, TIMEOUT)).isTrue();
        server.join();
    }

    @Test
    void anHttp2ServersSettingsFrameIsNotHttp1(@TempDir Path dir) throws Exception {
        Path socket = dir.resolve("containerd.sock");
        CompletableFuture<Void> server = serveOnce(socket, new byte[] {0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 5, 0, 0, 64, 0}, false);
        assertThat(SocketProbe.answersHttp1(socket, TIMEOUT)).isFalse();
        server.join();
    }

    @Test
    void silenceClosedConnectionsAndNoSocketAreNotHttp1(@TempDir Path dir) throws Exception {
        Path silent = dir.resolve("silent.sock");
        CompletableFuture<Void> server = serveOnce(silent, null, true);
        long start = System.nanoTime();
        assertThat(SocketProbe.answersHttp1(silent, TIMEOUT)).isFalse();
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(TIMEOUT.multipliedBy(3));
        server.join();

        Path closing = dir.resolve("closing.sock");
        server = serveOnce(closing, "HTT".getBytes(StandardCharsets.US_ASCII), false);
        assertThat(SocketProbe.answersHttp1(closing, TIMEOUT)).isFalse();
        server.join();

        assertThat(SocketProbe.answersHttp1(dir.resolve("none.sock"), TIMEOUT)).isFalse();
    }
}
