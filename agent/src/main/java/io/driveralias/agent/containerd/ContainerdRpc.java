package io.driveralias.agent.containerd;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.Empty;
import com.google.protobuf.MessageLite;
import com.google.protobuf.Parser;
import io.driveralias.agent.containerd.api.Envelope;
import io.driveralias.agent.containerd.api.GetContainerRequest;
import io.driveralias.agent.containerd.api.GetTaskRequest;
import io.driveralias.agent.containerd.api.GetTaskResponse;
import io.driveralias.agent.containerd.api.ListContainersRequest;
import io.driveralias.agent.containerd.api.ListTasksRequest;
import io.driveralias.agent.containerd.api.ListTasksResponse;
import io.driveralias.agent.containerd.api.MountsRequest;
import io.driveralias.agent.containerd.api.MountsResponse;
import io.driveralias.agent.containerd.api.PublishRequest;
import io.driveralias.agent.containerd.api.SubscribeRequest;
import io.driveralias.agent.containerd.api.VersionResponse;
import io.driveralias.agent.grpc.GrpcException;
import io.driveralias.agent.grpc.GrpcMethod;
import io.driveralias.agent.json.DescriptionTooLarge;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;

/**
 * The containerd methods the agent calls: a full method name, how its answer is read, and the
 * answer's bound. protobuf's messages are parsed with a recursion limit; a container's record and
 * a list the agent only counts are read as they stream, never parsed whole.
 */
final class ContainerdRpc {

    /** The agent's messages nest a few levels deep; protobuf's default (100) is for any message. */
    private static final int RECURSION_LIMIT = 32;

    static final GrpcMethod<Empty, VersionResponse> VERSION = proto("containerd.services.version.v1.Version/Version",
            VersionResponse.parser());
    /** A container's record, read as it streams: only {@link ContainerRecord}'s few bounded fields are kept. */
    static final GrpcMethod<GetContainerRequest, ContainerRecord> GET_CONTAINER = streamed(
            "containerd.services.containers.v1.Containers/Get", ContainerRecordReader::readResponse);
    /** How many containers a list holds; none of them is read. */
    static final GrpcMethod<ListContainersRequest, Integer> COUNT_CONTAINERS = streamed(
            "containerd.services.containers.v1.Containers/List", ContainerdRpc::countItems);
    static final GrpcMethod<GetTaskRequest, GetTaskResponse> GET_TASK = proto("containerd.services.tasks.v1.Tasks/Get",
            GetTaskResponse.parser());
    static final GrpcMethod<ListTasksRequest, ListTasksResponse> LIST_TASKS = proto("containerd.services.tasks.v1.Tasks/List",
            ListTasksResponse.parser());
    static final GrpcMethod<MountsRequest, MountsResponse> SNAPSHOT_MOUNTS = proto("containerd.services.snapshots.v1.Snapshots/Mounts",
            MountsResponse.parser());
    static final GrpcMethod<PublishRequest, Empty> PUBLISH = proto("containerd.services.events.v1.Events/Publish", Empty.parser());
    static final GrpcMethod<SubscribeRequest, Envelope> SUBSCRIBE = new GrpcMethod<>("containerd.services.events.v1.Events/Subscribe",
            parsed(Envelope.parser()), ContainerdClient.MAX_EVENT);

    /** Reads an answer from a stream of its bytes. */
    @FunctionalInterface
    interface StreamReader<T> {
        T read(InputStream in) throws IOException;
    }

    private ContainerdRpc() {
    }

    private static <Q extends MessageLite, R> GrpcMethod<Q, R> proto(String name, Parser<R> parser) {
        return new GrpcMethod<>(name, parsed(parser), ContainerdClient.MAX_MESSAGE);
    }

    private static <R> GrpcMethod.Reader<R> parsed(Parser<R> parser) {
        return (in, offset, length) -> {
            CodedInputStream coded = CodedInputStream.newInstance(in, offset, length);
            coded.setRecursionLimit(RECURSION_LIMIT);
            return parser.parseFrom(coded);
        };
    }

    /** A record over the agent's bounds is the call's RESOURCE_EXHAUSTED, as one over the client's message size is. */
    private static <Q extends MessageLite, R> GrpcMethod<Q, R> streamed(String name, StreamReader<R> reader) {
        return new GrpcMethod<>(name, (in, offset, length) -> {
            try {
                return reader.read(new ByteArrayInputStream(in, offset, length));
            } catch (DescriptionTooLarge e) {
                throw GrpcException.tooLarge("over the agent's bounds: " + e.getMessage());
            }
        }, ContainerdClient.MAX_MESSAGE);
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
