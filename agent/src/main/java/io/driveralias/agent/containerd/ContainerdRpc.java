package io.driveralias.agent.containerd;

import com.google.protobuf.Empty;
import com.google.protobuf.Message;
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
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;

/**
 * The containerd methods the agent calls, written by hand (protoc's gRPC plugin is not used):
 * a full method name, its kind, and a marshaller for each side. Messages are read with a
 * recursion limit; their size is bounded by the channel's maximum inbound message size.
 */
final class ContainerdRpc {

    /** containerd's header naming the namespace of a namespaced call. */
    static final Metadata.Key<String> NAMESPACE = Metadata.Key.of("containerd-namespace", Metadata.ASCII_STRING_MARSHALLER);

    static final MethodDescriptor<Empty, VersionResponse> VERSION = unary("containerd.services.version.v1.Version/Version",
            Empty.getDefaultInstance(), VersionResponse.parser());
    /** A container's record, read as it streams: only {@link ContainerRecord}'s few bounded fields are kept. */
    static final MethodDescriptor<GetContainerRequest, ContainerRecord> GET_CONTAINER = MethodDescriptor
            .<GetContainerRequest, ContainerRecord>newBuilder().setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName("containerd.services.containers.v1.Containers/Get")
            .setRequestMarshaller(new ProtoMarshaller<>(GetContainerRequest.parser()))
            .setResponseMarshaller(new StreamingMarshaller<>(ContainerRecordReader::readResponse))
            .build();
    /** How many containers a list holds; none of them is read. */
    static final MethodDescriptor<ListContainersRequest, Integer> COUNT_CONTAINERS = MethodDescriptor
            .<ListContainersRequest, Integer>newBuilder().setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName("containerd.services.containers.v1.Containers/List")
            .setRequestMarshaller(new ProtoMarshaller<>(ListContainersRequest.parser()))
            .setResponseMarshaller(new StreamingMarshaller<>(StreamingMarshaller::countItems))
            .build();
    static final MethodDescriptor<GetTaskRequest, GetTaskResponse> GET_TASK = unary("containerd.services.tasks.v1.Tasks/Get",
            GetTaskRequest.getDefaultInstance(), GetTaskResponse.parser());
    static final MethodDescriptor<ListTasksRequest, ListTasksResponse> LIST_TASKS = unary(
            "containerd.services.tasks.v1.Tasks/List", ListTasksRequest.getDefaultInstance(), ListTasksResponse.parser());
    static final MethodDescriptor<MountsRequest, MountsResponse> SNAPSHOT_MOUNTS = unary(
            "containerd.services.snapshots.v1.Snapshots/Mounts", MountsRequest.getDefaultInstance(), MountsResponse.parser());
    static final MethodDescriptor<PublishRequest, Empty> PUBLISH = unary("containerd.services.events.v1.Events/Publish",
            PublishRequest.getDefaultInstance(), Empty.parser());
    static final MethodDescriptor<SubscribeRequest, Envelope> SUBSCRIBE = MethodDescriptor.<SubscribeRequest, Envelope>newBuilder()
            .setType(MethodDescriptor.MethodType.SERVER_STREAMING)
            .setFullMethodName("containerd.services.events.v1.Events/Subscribe")
            .setRequestMarshaller(new ProtoMarshaller<>(SubscribeRequest.parser()))
            .setResponseMarshaller(new ProtoMarshaller<>(Envelope.parser()))
            .build();

    private ContainerdRpc() {
    }

    private static <Q extends Message, R extends Message> MethodDescriptor<Q, R> unary(String name, Q request, Parser<R> response) {
        @SuppressWarnings("unchecked")
        Parser<Q> requestParser = (Parser<Q>) request.getParserForType();
        return MethodDescriptor.<Q, R>newBuilder().setType(MethodDescriptor.MethodType.UNARY).setFullMethodName(name)
                .setRequestMarshaller(new ProtoMarshaller<>(requestParser)).setResponseMarshaller(new ProtoMarshaller<>(response)).build();
    }
}
