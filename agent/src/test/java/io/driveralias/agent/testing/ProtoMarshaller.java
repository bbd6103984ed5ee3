package io.driveralias.agent.testing;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.Parser;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.io.InputStream;

/**
 * For the tests' own grpc-java client ({@link CriClient}): protobuf's wire format both ways for a
 * hand-written gRPC method descriptor (protoc's gRPC plugin is not used). A message that does not
 * parse is the call's error, not an exception on gRPC's thread; nesting is limited, and the size by the channel's maximum inbound message size.
 */
public final class ProtoMarshaller<T extends Message> implements MethodDescriptor.Marshaller<T> {

    /** The agent's messages nest a few levels deep; protobuf's default (100) is for any message. */
    private static final int RECURSION_LIMIT = 32;
    private final Parser<T> parser;

    public ProtoMarshaller(Parser<T> parser) {
        this.parser = parser;
    }

    @Override
    public InputStream stream(T value) {
        return value.toByteString().newInput();
    }

    @Override
    public T parse(InputStream stream) {
        try {
            CodedInputStream in = CodedInputStream.newInstance(stream);
            in.setRecursionLimit(RECURSION_LIMIT);
            return parser.parseFrom(in);
        } catch (InvalidProtocolBufferException e) {
            throw Status.INTERNAL.withDescription("not a valid message: " + e.getMessage()).withCause(e).asRuntimeException();
        }
    }
}
