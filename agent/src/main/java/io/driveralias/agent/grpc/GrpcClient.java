package io.driveralias.agent.grpc;

import com.google.protobuf.MessageLite;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * A gRPC client on a Unix socket, of the project's own: HTTP/2 with prior knowledge over one
 * {@link SocketChannel} ({@link H2Connection}), one reading thread, unary calls and server
 * streams, each call with its deadline ({@code grpc-timeout} too) and its answer's bound. The
 * connection is made at the first call, and again at the first call after it broke or the server
 * sent GOAWAY: no backoff, so a daemon that restarted is reached at once. A call whose whole
 * deadline passes with nothing read on the connection ends that connection (a server that hangs,
 * or a write that blocks on it), so the next call connects anew.
 */
public final class GrpcClient implements AutoCloseable {

    private final Path socket;
    private final String threadName;
    private H2Connection connection;
    private boolean closed;

    /** @param threadName the connection's reading thread's name */
    public GrpcClient(Path socket, String threadName) {
        this.socket = socket;
        this.threadName = threadName;
    }

    public Path socket() {
        return socket;
    }

    /** A unary call: the answer, read on this thread, or the call's failure. {@code headers}: (name, value) pairs, lower case. */
    public <Q extends MessageLite, R> R call(GrpcMethod<Q, R> method, Q request, byte[][] headers, Duration deadline)
            throws GrpcException {
        long begun = System.nanoTime();
        long end = begun + deadline.toNanos();
        H2Connection on = connection(end);
        long framesBefore = on.framesRead();
        GrpcStream stream = null;
        try {
            stream = on.open(method.path(), headers, request.toByteArray(), false, method.maxResponse(), end);
            if (!stream.awaitDone(end)) {
                GrpcException why = new GrpcException(GrpcException.Code.DEADLINE_EXCEEDED, "no answer within "
                        + deadline.toMillis() + " ms", null);
                on.cancel(stream, why);
                if (on.framesRead() == framesBefore) {
                    on.fail(new GrpcException(GrpcException.Code.UNAVAILABLE, "the server sent nothing for " + deadline.toMillis()
                            + " ms while a call waited", null));
                }
                throw why;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            GrpcException why = new GrpcException(GrpcException.Code.CANCELLED, "interrupted", e);
            if (stream != null) {
                on.cancel(stream, why);
            }
            throw why;
        }
        return read(method, stream.result());
    }

    /** A server-streaming call, its request sent within {@code deadline}; its answers as they come. */
    public <Q extends MessageLite, R> ServerStream<R> stream(GrpcMethod<Q, R> method, Q request, byte[][] headers, Duration deadline)
            throws GrpcException {
        long end = System.nanoTime() + deadline.toNanos();
        H2Connection on = connection(end);
        try {
            return new ServerStream<>(on, on.open(method.path(), headers, request.toByteArray(), true, method.maxResponse(), end), method);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new GrpcException(GrpcException.Code.CANCELLED, "interrupted", e);
        }
    }

    /** An answer read by its method's reader: malformed is INTERNAL, the reader's own failures as they are. */
    static <R> R read(GrpcMethod<?, R> method, byte[] message) throws GrpcException {
        try {
            return method.reader().read(message, 0, message.length);
        } catch (GrpcException e) {
            throw e;
        } catch (IOException | RuntimeException e) {
            throw new GrpcException(GrpcException.Code.INTERNAL, "not a valid message: " + e.getMessage(), e);
        }
    }

    /** The connection new calls use: the current one, or a new one if it is broken or going away. */
    private synchronized H2Connection connection(long deadline) throws GrpcException {
        if (closed) {
            throw new GrpcException(GrpcException.Code.UNAVAILABLE, "the client is closed", null);
        }
        if (connection == null || !connection.usable()) {
            if (connection != null) {
                connection.retire();
            }
            SocketChannel channel = connect(deadline);
            H2Connection made = new H2Connection(channel, ByteBuffer.allocate(64 << 10));
            try {
                made.start();
            } catch (IOException e) {
                made.close();
                throw new GrpcException(GrpcException.Code.UNAVAILABLE, "connection to " + socket + ": " + e.getMessage(), e);
            }
            Thread.ofPlatform().daemon().name(threadName).start(made::run);
            connection = made;
        }
        return connection;
    }

    /** Connects within the deadline: a Unix socket's connect waits only while the server's backlog is full. */
    private SocketChannel connect(long deadline) throws GrpcException {
        SocketChannel channel = null;
        try {
            channel = SocketChannel.open(StandardProtocolFamily.UNIX);
            channel.configureBlocking(false);
            if (!channel.connect(UnixDomainSocketAddress.of(socket))) {
                try (Selector selector = Selector.open()) {
                    channel.register(selector, SelectionKey.OP_CONNECT);
                    while (!channel.finishConnect()) {
                        long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                        if (left <= 0) {
                            throw new IOException("not accepted within the deadline");
                        }
                        selector.select(left);
                    }
                }
            }
            channel.configureBlocking(true);
            return channel;
        } catch (IOException e) {
            if (channel != null) {
                try {
                    channel.close();
                } catch (IOException ignored) {
                    // closing a channel that failed
                }
            }
            throw new GrpcException(GrpcException.Code.UNAVAILABLE, "connect to " + socket + ": " + e.getMessage(), e);
        }
    }

    @Override
    public synchronized void close() {
        closed = true;
        if (connection != null) {
            connection.close();
        }
    }
}
