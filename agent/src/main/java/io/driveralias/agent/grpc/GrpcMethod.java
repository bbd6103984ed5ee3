package io.driveralias.agent.grpc;

import com.google.protobuf.MessageLite;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * A gRPC method as the client calls it: its path ({@code /package.Service/Method}), and how its
 * answer is read, within a bound on the answer's size.
 *
 * @param name        the full method name, {@code package.Service/Method}
 * @param reader      reads one answer from its bytes, on the calling thread
 * @param maxResponse the largest answer (message) read; a larger one fails the call with RESOURCE_EXHAUSTED
 */
public record GrpcMethod<Q extends MessageLite, R>(String name, Reader<R> reader, int maxResponse) {

    /** Reads an answer from {@code length} bytes at {@code offset}; malformed input is an IOException. */
    @FunctionalInterface
    public interface Reader<R> {
        R read(byte[] in, int offset, int length) throws IOException;
    }

    /** The method's name without its service, for messages. */
    public String bareName() {
        return name.substring(name.indexOf('/') + 1);
    }

    byte[] path() {
        return ("/" + name).getBytes(StandardCharsets.US_ASCII);
    }
}
