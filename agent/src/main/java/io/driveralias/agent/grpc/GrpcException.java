package io.driveralias.agent.grpc;

import java.io.IOException;

/**
 * A call's failure as gRPC words it: a status code (containerd's errors map onto them: not found,
 * unavailable, ...) and the server's message, or the client's own reason (a deadline, a broken
 * connection, an answer over its bound).
 */
public final class GrpcException extends IOException {

    /** gRPC's status codes, by number (grpc/doc/statuscodes.md). */
    public enum Code {
        OK, CANCELLED, UNKNOWN, INVALID_ARGUMENT, DEADLINE_EXCEEDED, NOT_FOUND, ALREADY_EXISTS, PERMISSION_DENIED,
        RESOURCE_EXHAUSTED, FAILED_PRECONDITION, ABORTED, OUT_OF_RANGE, UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS,
        UNAUTHENTICATED;

        /** A {@code grpc-status} value; one outside the known codes is UNKNOWN, as gRPC's clients take it. */
        static Code of(int value) {
            Code[] all = values();
            return value >= 0 && value < all.length ? all[value] : UNKNOWN;
        }
    }

    private final Code code;
    private final String description;
    private final boolean http1;

    GrpcException(Code code, String description, Throwable cause) {
        this(code, description, cause, false);
    }

    private GrpcException(Code code, String description, Throwable cause, boolean http1) {
        super(code + (description.isEmpty() ? "" : ": " + description), cause);
        this.code = code;
        this.description = description;
        this.http1 = http1;
    }

    /** The connection's server answered HTTP/1.x: no call can succeed there. */
    static GrpcException http1(H2ProtocolException.Http1 cause) {
        return new GrpcException(Code.UNAVAILABLE, cause.getMessage(), cause, true);
    }

    /** For a reader of an answer: the answer goes over the reader's bounds. */
    public static GrpcException tooLarge(String description) {
        return new GrpcException(Code.RESOURCE_EXHAUSTED, description, null);
    }

    public Code code() {
        return code;
    }

    public String description() {
        return description;
    }

    /** Whether the server answered HTTP/1.x (Docker's API socket, most likely). */
    public boolean http1() {
        return http1;
    }
}
