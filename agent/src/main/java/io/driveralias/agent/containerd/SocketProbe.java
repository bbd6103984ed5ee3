package io.driveralias.agent.containerd;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;

/**
 * Tells an HTTP/1.1 server (Docker's API socket) from an HTTP/2 one on a Unix socket, where
 * gRPC only says "network closed": it sends HTTP/2's client preface and an empty SETTINGS
 * frame, and reads the first bytes of the answer, with a deadline. Docker answers
 * {@code HTTP/1.1 301 Moved Permanently}; containerd answers with a SETTINGS frame.
 */
final class SocketProbe {

    private static final byte[] PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] EMPTY_SETTINGS = {0, 0, 0, 4, 0, 0, 0, 0, 0};

    private SocketProbe() {
    }

    /** True when the socket answers HTTP's preface with an HTTP/1.x status line. */
    static boolean answersHttp1(Path socket, Duration timeout) {
        try (SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX);
             Selector selector = Selector.open()) {
            channel.connect(UnixDomainSocketAddress.of(socket));
            ByteBuffer out = ByteBuffer.allocate(PREFACE.length + EMPTY_SETTINGS.length).put(PREFACE).put(EMPTY_SETTINGS).flip();
            while (out.hasRemaining()) {
                channel.write(out);
            }
            channel.configureBlocking(false);
            channel.register(selector, SelectionKey.OP_READ);
            ByteBuffer in = ByteBuffer.allocate(5);
            long deadline = System.nanoTime() + timeout.toNanos();
            while (in.hasRemaining()) {
                long left = (deadline - System.nanoTime()) / 1_000_000;
                if (left <= 0 || selector.select(left) == 0) {
                    break;
                }
                selector.selectedKeys().clear();
                if (channel.read(in) < 0) {
                    break;
                }
            }
            return new String(in.array(), 0, in.position(), StandardCharsets.US_ASCII).equals("HTTP/");
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }
}
