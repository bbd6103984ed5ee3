package io.driveralias.agent.containerd;

import io.driveralias.agent.json.DescriptionTooLarge;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.io.IOException;
import java.io.InputStream;

/**
 * The answer side of a method whose answers the agent reads as they stream (a container's
 * record, a list it only counts), never parsed whole. A record over the agent's bounds is the
 * call's {@code RESOURCE_EXHAUSTED}, as one over gRPC's message size is; malformed input its
 * {@code INTERNAL}: the call's error, not an exception on gRPC's thread.
 */
final class StreamingMarshaller<T> implements MethodDescriptor.Marshaller<T> {

    @FunctionalInterface
    interface Reader<T> {
        T read(InputStream in) throws IOException;
    }

    private final Reader<T> reader;

    StreamingMarshaller(Reader<T> reader) {
        this.reader = reader;
    }

    @Override
    public InputStream stream(T value) {
        throw new UnsupportedOperationException("an answer the agent only reads");
    }

    @Override
    public T parse(InputStream stream) {
        try {
            return reader.read(stream);
        } catch (DescriptionTooLarge e) {
            throw Status.RESOURCE_EXHAUSTED.withDescription("over the agent's bounds: " + e.getMessage()).asRuntimeException();
        } catch (IOException | RuntimeException e) {
            throw Status.INTERNAL.withDescription("not a valid message: " + e.getMessage()).withCause(e).asRuntimeException();
        }
    }

    /** The number of field-1 entries of a message (a list's items), each skipped unread. */
    static int countItems(InputStream in) throws IOException {
        ProtoInput proto = ProtoInput.of(in);
        int count = 0;
        for (int tag = proto.nextTag(); tag != 0; tag = proto.nextTag()) {
            if (ProtoInput.field(tag) == 1) {
                count++;
            }
            proto.skipField(tag);
        }
        return count;
    }
}
