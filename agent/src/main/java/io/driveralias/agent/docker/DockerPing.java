package io.driveralias.agent.docker;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardProtocolFamily;
import java.net.URI;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * {@code GET /_ping} with one deadline for everything: connect, write, read. A frozen dockerd
 * (SIGSTOP, a hung daemon) still accepts connections on its socket, and the HTTP client's own
 * timeouts did not end a call on a Unix socket: this is a few lines of non-blocking I/O that
 * always returns by the deadline.
 */
final class DockerPing {

    private static final byte[] REQUEST = "GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

    private DockerPing() {
    }

    /** True if the daemon at {@code host} answered 200 within {@code timeout}. */
    static boolean ping(URI host, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        SocketAddress address;
        StandardProtocolFamily family;
        if ("unix".equals(host.getScheme())) {
            address = UnixDomainSocketAddress.of(host.getPath());
            family = StandardProtocolFamily.UNIX;
        } else {
            address = new InetSocketAddress(host.getHost(), host.getPort());
            family = StandardProtocolFamily.INET;
        }
        try (SocketChannel channel = family == StandardProtocolFamily.UNIX ? SocketChannel.open(family)
                : SocketChannel.open();
             Selector selector = Selector.open()) {
            channel.configureBlocking(false);
            if (!channel.connect(address)) {
                channel.register(selector, SelectionKey.OP_CONNECT);
                if (!await(selector, deadline) || !channel.finishConnect()) {
                    return false;
                }
            }
            ByteBuffer out = ByteBuffer.wrap(REQUEST);
            ByteBuffer in = ByteBuffer.allocate(64);
            channel.register(selector, SelectionKey.OP_WRITE);
            while (out.hasRemaining()) {
                if (!await(selector, deadline)) {
                    return false;
                }
                channel.write(out);
            }
            channel.register(selector, SelectionKey.OP_READ);
            while (in.position() < 12) {
                if (!await(selector, deadline) || channel.read(in) < 0) {
                    return false;
                }
            }
            String status = new String(in.array(), 0, in.position(), StandardCharsets.US_ASCII);
            return status.startsWith("HTTP/1.") && status.substring(8).startsWith(" 200");
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    private static boolean await(Selector selector, long deadline) throws IOException {
        long left = (deadline - System.nanoTime()) / 1_000_000;
        if (left <= 0) {
            return false;
        }
        selector.selectedKeys().clear();
        return selector.select(left) > 0;
    }
}
