package io.driveralias.agent.containerd;

import io.driveralias.agent.core.Printable;
import io.driveralias.agent.live.ContainerRuntimeException;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.buffer.UnpooledByteBufAllocator;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import java.time.Duration;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;

/**
 * One gRPC channel to containerd's socket: netty's epoll transport on a Unix socket, one
 * event-loop thread, unpooled buffers (a few small messages a second do not need netty's
 * per-thread arenas), every unary call with a deadline and every answer with a size bound.
 * Namespaced calls carry containerd's namespace header.
 */
final class ContainerdClient implements AutoCloseable {

    /**
     * The largest answer read: a container's record holds its OCI spec (the image's environment
     * and the pod's) and the CRI's own copy of the pod's part (environment, mounts, labels,
     * annotations, each bounded by the API server's 1.5 MiB object limit on Kubernetes). gRPC
     * holds a whole answer in its buffers before the agent reads it as it streams, so at most two
     * records are on the wire at once (ContainerdRuntime): 16 MiB of native memory at worst.
     */
    static final int MAX_MESSAGE = 8 << 20;
    static final int MAX_EVENT = 1 << 20;
    private static final int MAX_METADATA = 16 << 10;
    /** How much containerd may send ahead of what is read: events are a few hundred bytes. */
    private static final int FLOW_CONTROL_WINDOW = 256 << 10;

    private final String socket;
    private final EventLoopGroup loop;
    private final ManagedChannel channel;
    private final Channel namespaced;

    ContainerdClient(String socket, String namespace) {
        this.socket = socket;
        if (!Epoll.isAvailable()) {
            // Only on a platform without netty's bundled native library, or where it cannot be unpacked (a noexec /tmp).
            throw new IllegalStateException("containerd's Unix socket needs netty's epoll transport, which cannot load: "
                    + Epoll.unavailabilityCause());
        }
        this.loop = new EpollEventLoopGroup(1, daemonThreads("containerd-grpc"));
        this.channel = NettyChannelBuilder.forAddress(new DomainSocketAddress(socket))
                .eventLoopGroup(loop)
                .channelType(EpollDomainSocketChannel.class)
                .withOption(ChannelOption.ALLOCATOR, UnpooledByteBufAllocator.DEFAULT)
                // gRPC asks every channel for TCP keepalive, which a Unix socket does not have (netty would warn).
                .withOption(ChannelOption.SO_KEEPALIVE, null)
                .overrideAuthority("localhost")
                .usePlaintext()
                .directExecutor()
                .disableRetry()
                .maxInboundMessageSize(MAX_MESSAGE)
                .maxInboundMetadataSize(MAX_METADATA)
                .flowControlWindow(FLOW_CONTROL_WINDOW)
                .build();
        Metadata headers = new Metadata();
        headers.put(ContainerdRpc.NAMESPACE, namespace);
        this.namespaced = ClientInterceptors.intercept(channel, MetadataUtils.newAttachHeadersInterceptor(headers));
    }

    String socket() {
        return socket;
    }

    /**
     * A call without namespace (version) that connects first: after containerd went away, gRPC
     * waits before it connects again (up to two minutes as failures add up) and meanwhile fails
     * every call with the last error, even once containerd is back. The agent's (re)connect and
     * ping want the answer of now: a new attempt at once, and the call waits for it, within its
     * deadline.
     */
    <Q, R> R callConnecting(MethodDescriptor<Q, R> method, Q request, Duration deadline) throws ContainerRuntimeException {
        channel.resetConnectBackoff();
        return call(channel, method, request, deadline, true);
    }

    /**
     * A call without namespace that asks for a new connection attempt but does not wait for it:
     * the ping, every 250 ms while containerd is down, so that a restarted containerd is
     * connected to within 250 ms, and a waiting {@link #callConnecting} goes through.
     */
    <Q, R> R callNow(MethodDescriptor<Q, R> method, Q request, Duration deadline) throws ContainerRuntimeException {
        channel.resetConnectBackoff();
        return call(channel, method, request, deadline, false);
    }

    /** A call in the configured namespace. */
    <Q, R> R callInNamespace(MethodDescriptor<Q, R> method, Q request, Duration deadline) throws ContainerRuntimeException {
        return call(namespaced, method, request, deadline, false);
    }

    /**
     * A streaming call in the configured namespace, for the caller to start. Its messages are
     * smaller than a container's record: an event is a few hundred bytes, a task's with its
     * root's layers a few KiB.
     */
    <Q, R> ClientCall<Q, R> newStreamInNamespace(MethodDescriptor<Q, R> method) {
        return namespaced.newCall(method, CallOptions.DEFAULT.withMaxInboundMessageSize(MAX_EVENT));
    }

    private <Q, R> R call(Channel on, MethodDescriptor<Q, R> method, Q request, Duration deadline, boolean waitForReady)
            throws ContainerRuntimeException {
        CallOptions options = CallOptions.DEFAULT.withDeadlineAfter(deadline.toMillis(), TimeUnit.MILLISECONDS);
        try {
            return ClientCalls.blockingUnaryCall(on, method, waitForReady ? options.withWaitForReady() : options, request);
        } catch (StatusRuntimeException e) {
            throw failure(method.getBareMethodName(), e.getStatus());
        }
    }

    /** A call's failure as the port's types: not found, unreachable, another API, or an error. */
    ContainerRuntimeException failure(String what, Status status) {
        String message = what + ": " + describe(status);
        if (isHttp1(status)) {
            return http1(socket);
        }
        return switch (status.getCode()) {
            case NOT_FOUND -> new NotFound(message);
            // The agent's own bounds on a record (StreamingMarshaller), or gRPC's on a message.
            case RESOURCE_EXHAUSTED -> new ContainerRuntimeException.TooLarge(message);
            case UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED -> new ContainerRuntimeException.Unreachable(message,
                    status.asRuntimeException());
            case UNIMPLEMENTED -> new ContainerRuntimeException.WrongApi(socket + " answers gRPC, but not containerd's API ("
                    + message + ")");
            default -> new ContainerRuntimeException(message);
        };
    }

    /** The error for a socket that speaks HTTP/1.1: Docker's, most likely. */
    static ContainerRuntimeException.WrongApi http1(String socket) {
        return new ContainerRuntimeException.WrongApi(socket + " answers HTTP/1.1, not containerd's gRPC API"
                + " (is it Docker's socket? --containerd-address names containerd's)");
    }

    /**
     * netty's HTTP/2 client reading an HTTP/1.1 answer (Docker's API, any web server) reports
     * its first bytes: "HTTP/" is 485454502f.
     */
    private static boolean isHttp1(Status status) {
        for (Throwable t = status.getCause(); t != null; t = t.getCause()) {
            if (String.valueOf(t.getMessage()).contains("485454502f")) {
                return true;
            }
        }
        return String.valueOf(status.getDescription()).contains("485454502f");
    }

    /** The status and its cause's message (gRPC says "io exception"; the cause says which). */
    static String describe(Status status) {
        StringBuilder text = new StringBuilder(status.getCode().toString());
        if (status.getDescription() != null) {
            text.append(": ").append(status.getDescription());
        }
        Throwable cause = status.getCause();
        while (cause != null && cause.getMessage() == null && cause.getCause() != null) {
            cause = cause.getCause();
        }
        if (cause != null) {
            text.append(" (").append(cause.getMessage() != null ? cause.getMessage() : cause.getClass().getSimpleName()).append(')');
        }
        return Printable.of(text.toString());
    }

    /** containerd's NOT_FOUND: the caller knows what was not found. */
    static final class NotFound extends ContainerRuntimeException {
        NotFound(String message) {
            super(message);
        }
    }

    private static ThreadFactory daemonThreads(String name) {
        return r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        };
    }

    @Override
    public void close() {
        channel.shutdownNow();
        try {
            channel.awaitTermination(2, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        loop.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
    }
}
