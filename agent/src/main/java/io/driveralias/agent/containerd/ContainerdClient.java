package io.driveralias.agent.containerd;

import com.google.protobuf.MessageLite;
import io.driveralias.agent.core.Printable;
import io.driveralias.agent.grpc.GrpcClient;
import io.driveralias.agent.grpc.GrpcException;
import io.driveralias.agent.grpc.GrpcMethod;
import io.driveralias.agent.grpc.ServerStream;
import io.driveralias.agent.live.ContainerRuntimeException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;

/**
 * containerd's gRPC API on its socket, through the project's own client ({@link GrpcClient}: HTTP/2
 * on one Unix socket connection, one reading thread), every call with a deadline and every answer
 * with a size bound; namespaced calls carry containerd's namespace header. Failures come out as
 * the port's exceptions.
 */
final class ContainerdClient implements AutoCloseable {

    /**
     * The largest answer read: a container's record holds its OCI spec (the image's environment
     * and the pod's) and the CRI's own copy of the pod's part (environment, mounts, labels,
     * annotations, each bounded by the API server's 1.5 MiB object limit on Kubernetes). An answer
     * is held whole (its buffer growing as it arrives) before the agent reads it as it streams, so
     * at most two records are read at once (ContainerdReads): 16 MiB of heap at worst.
     */
    static final int MAX_MESSAGE = 8 << 20;
    static final int MAX_EVENT = 1 << 20;
    /** containerd's header naming the namespace of a namespaced call. */
    private static final byte[] NAMESPACE = "containerd-namespace".getBytes(StandardCharsets.US_ASCII);
    private static final byte[][] NO_HEADERS = {};

    private final String socket;
    private final GrpcClient grpc;
    private final byte[][] namespaced;

    ContainerdClient(String socket, String namespace) {
        this.socket = socket;
        this.grpc = new GrpcClient(Path.of(socket), "containerd-grpc");
        this.namespaced = new byte[][] {NAMESPACE, namespace.getBytes(StandardCharsets.US_ASCII)};
    }

    String socket() {
        return socket;
    }

    /**
     * A call without namespace (version). After containerd went away the next call connects
     * anew at once: the agent's (re)connect and its ping every 250 ms reach a restarted containerd
     * as soon as it listens.
     */
    <Q extends MessageLite, R> R call(GrpcMethod<Q, R> method, Q request, Duration deadline) throws ContainerRuntimeException {
        return call(method, request, NO_HEADERS, deadline);
    }

    /** A call in the configured namespace. */
    <Q extends MessageLite, R> R callInNamespace(GrpcMethod<Q, R> method, Q request, Duration deadline)
            throws ContainerRuntimeException {
        return call(method, request, namespaced, deadline);
    }

    /**
     * A streaming call in the configured namespace, its request sent within {@code deadline}. Its
     * messages are smaller than a container's record: an event is a few hundred bytes.
     */
    <Q extends MessageLite, R> ServerStream<R> streamInNamespace(GrpcMethod<Q, R> method, Q request, Duration deadline)
            throws ContainerRuntimeException {
        try {
            return grpc.stream(method, request, namespaced, deadline);
        } catch (GrpcException e) {
            throw failure(method.bareName(), e);
        }
    }

    private <Q extends MessageLite, R> R call(GrpcMethod<Q, R> method, Q request, byte[][] headers, Duration deadline)
            throws ContainerRuntimeException {
        try {
            return grpc.call(method, request, headers, deadline);
        } catch (GrpcException e) {
            throw failure(method.bareName(), e);
        }
    }

    /** A call's failure as the port's types: not found, unreachable, another API, or an error. */
    ContainerRuntimeException failure(String what, GrpcException e) {
        if (e.http1()) {
            return http1(socket);
        }
        String message = Printable.of(what + ": " + e.getMessage());
        return switch (e.code()) {
            case NOT_FOUND -> new NotFound(message);
            // The agent's own bounds on a record (ContainerdRpc), or the client's on a message.
            case RESOURCE_EXHAUSTED -> new ContainerRuntimeException.TooLarge(message);
            case UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED -> new ContainerRuntimeException.Unreachable(message, e);
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

    /** containerd's NOT_FOUND: the caller knows what was not found. */
    static final class NotFound extends ContainerRuntimeException {
        NotFound(String message) {
            super(message);
        }
    }

    @Override
    public void close() {
        grpc.close();
    }
}
