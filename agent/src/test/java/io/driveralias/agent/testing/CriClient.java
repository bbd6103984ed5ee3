package io.driveralias.agent.testing;

import com.google.protobuf.Message;
import com.google.protobuf.Parser;
import io.driveralias.agent.testing.cri.ContainerConfig;
import io.driveralias.agent.testing.cri.ContainerFilter;
import io.driveralias.agent.testing.cri.ContainerIdRequest;
import io.driveralias.agent.testing.cri.ContainerMetadata;
import io.driveralias.agent.testing.cri.ContainerStatus;
import io.driveralias.agent.testing.cri.ContainerStatusResponse;
import io.driveralias.agent.testing.cri.CreateContainerRequest;
import io.driveralias.agent.testing.cri.CreateContainerResponse;
import io.driveralias.agent.testing.cri.Device;
import io.driveralias.agent.testing.cri.Empty;
import io.driveralias.agent.testing.cri.ImageSpec;
import io.driveralias.agent.testing.cri.ImageStatusRequest;
import io.driveralias.agent.testing.cri.ImageStatusResponse;
import io.driveralias.agent.testing.cri.KeyValue;
import io.driveralias.agent.testing.cri.LinuxContainerConfig;
import io.driveralias.agent.testing.cri.LinuxContainerSecurityContext;
import io.driveralias.agent.testing.cri.LinuxPodSandboxConfig;
import io.driveralias.agent.testing.cri.LinuxSandboxSecurityContext;
import io.driveralias.agent.testing.cri.ListContainersRequest;
import io.driveralias.agent.testing.cri.ListContainersResponse;
import io.driveralias.agent.testing.cri.Mount;
import io.driveralias.agent.testing.cri.NamespaceMode;
import io.driveralias.agent.testing.cri.NamespaceOption;
import io.driveralias.agent.testing.cri.PodSandboxConfig;
import io.driveralias.agent.testing.cri.PodSandboxIdRequest;
import io.driveralias.agent.testing.cri.PodSandboxMetadata;
import io.driveralias.agent.testing.cri.RunPodSandboxRequest;
import io.driveralias.agent.testing.cri.RunPodSandboxResponse;
import io.driveralias.agent.testing.cri.StopContainerRequest;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.stub.ClientCalls;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * A client of the Kubernetes CRI (runtime.v1) on containerd's socket that makes pods and
 * containers the way the kubelet does: a sandbox first (host network: no CNI needed here), then
 * each container with the kubelet's labels and annotations, then StartContainer. Independent of
 * the code under test except for the marshaller of protobuf messages.
 */
public final class CriClient implements AutoCloseable {

    private static final String SERVICE = "runtime.v1.RuntimeService/";
    private static final String IMAGE_SERVICE = "runtime.v1.ImageService/";
    private static final MethodDescriptor<RunPodSandboxRequest, RunPodSandboxResponse> RUN_POD_SANDBOX =
            method(SERVICE + "RunPodSandbox", RunPodSandboxRequest.parser(), RunPodSandboxResponse.parser());
    private static final MethodDescriptor<PodSandboxIdRequest, Empty> STOP_POD_SANDBOX =
            method(SERVICE + "StopPodSandbox", PodSandboxIdRequest.parser(), Empty.parser());
    private static final MethodDescriptor<PodSandboxIdRequest, Empty> REMOVE_POD_SANDBOX =
            method(SERVICE + "RemovePodSandbox", PodSandboxIdRequest.parser(), Empty.parser());
    private static final MethodDescriptor<CreateContainerRequest, CreateContainerResponse> CREATE_CONTAINER =
            method(SERVICE + "CreateContainer", CreateContainerRequest.parser(), CreateContainerResponse.parser());
    private static final MethodDescriptor<ContainerIdRequest, Empty> START_CONTAINER =
            method(SERVICE + "StartContainer", ContainerIdRequest.parser(), Empty.parser());
    private static final MethodDescriptor<StopContainerRequest, Empty> STOP_CONTAINER =
            method(SERVICE + "StopContainer", StopContainerRequest.parser(), Empty.parser());
    private static final MethodDescriptor<ContainerIdRequest, Empty> REMOVE_CONTAINER =
            method(SERVICE + "RemoveContainer", ContainerIdRequest.parser(), Empty.parser());
    private static final MethodDescriptor<ContainerIdRequest, ContainerStatusResponse> CONTAINER_STATUS =
            method(SERVICE + "ContainerStatus", ContainerIdRequest.parser(), ContainerStatusResponse.parser());
    private static final MethodDescriptor<ListContainersRequest, ListContainersResponse> LIST_CONTAINERS =
            method(SERVICE + "ListContainers", ListContainersRequest.parser(), ListContainersResponse.parser());
    private static final MethodDescriptor<ImageStatusRequest, ImageStatusResponse> IMAGE_STATUS =
            method(IMAGE_SERVICE + "ImageStatus", ImageStatusRequest.parser(), ImageStatusResponse.parser());

    private final EventLoopGroup loop = new EpollEventLoopGroup(1);
    private final ManagedChannel channel;
    private final Path logRoot;

    CriClient(String socket, Path logRoot) {
        this.channel = NettyChannelBuilder.forAddress(new DomainSocketAddress(socket)).eventLoopGroup(loop)
                .channelType(EpollDomainSocketChannel.class).withOption(ChannelOption.SO_KEEPALIVE, null)
                .overrideAuthority("localhost").usePlaintext().build();
        this.logRoot = logRoot;
    }

    private static <Q extends Message, R extends Message> MethodDescriptor<Q, R> method(String name, Parser<Q> request,
                                                                                        Parser<R> response) {
        return MethodDescriptor.<Q, R>newBuilder().setType(MethodDescriptor.MethodType.UNARY).setFullMethodName(name)
                .setRequestMarshaller(new ProtoMarshaller<>(request)).setResponseMarshaller(new ProtoMarshaller<>(response))
                .build();
    }

    private <Q, R> R call(MethodDescriptor<Q, R> method, Q request) {
        return ClientCalls.blockingUnaryCall(channel, method, CallOptions.DEFAULT.withDeadlineAfter(60, TimeUnit.SECONDS), request);
    }

    /** A pod as the API server would have it: namespace, name, a fresh uid. */
    public record Pod(String namespace, String name, String uid) {
        public static Pod named(String name) {
            return new Pod("default", name, UUID.randomUUID().toString());
        }
    }

    /** A running sandbox: its id, and the configuration the kubelet passes again with each container. */
    public record Sandbox(String id, Pod pod, PodSandboxConfig config) {
    }

    /**
     * RunPodSandbox as the kubelet sends it for a hostNetwork pod (no hostname: the node's UTS
     * namespace is shared too); {@code handler} "" is the default runtime.
     */
    public Sandbox runPodSandbox(Pod pod, String handler) {
        return runPodSandbox(pod, handler, Map.of());
    }

    /** The same with annotations of the pod's own (its author's). */
    public Sandbox runPodSandbox(Pod pod, String handler, Map<String, String> annotations) {
        Map<String, String> labels = new LinkedHashMap<>();
        labels.put("io.kubernetes.pod.name", pod.name());
        labels.put("io.kubernetes.pod.namespace", pod.namespace());
        labels.put("io.kubernetes.pod.uid", pod.uid());
        labels.put("app", pod.name());
        PodSandboxConfig config = PodSandboxConfig.newBuilder()
                .setMetadata(PodSandboxMetadata.newBuilder().setName(pod.name()).setNamespace(pod.namespace()).setUid(pod.uid()))
                .setLogDirectory(logRoot.resolve(pod.namespace() + "_" + pod.name() + "_" + pod.uid()).toString())
                .putAllLabels(labels)
                .putAnnotations("kubernetes.io/config.source", "api")
                .putAnnotations("kubernetes.io/config.seen", "2026-01-01T00:00:00.000000000Z")
                .putAllAnnotations(annotations)
                .setLinux(LinuxPodSandboxConfig.newBuilder().setSecurityContext(LinuxSandboxSecurityContext.newBuilder()
                        .setNamespaceOptions(hostNetwork())))
                .build();
        String id = call(RUN_POD_SANDBOX, RunPodSandboxRequest.newBuilder().setConfig(config).setRuntimeHandler(handler).build())
                .getPodSandboxId();
        return new Sandbox(id, pod, config);
    }

    /** What a container asks for, beyond its name and image. */
    public record Spec(List<String> command, Map<String, String> env, Map<String, String> annotations, List<Mount> mounts,
                       List<String> devices, boolean readOnlyRoot) {
        public static Spec of(String... command) {
            return new Spec(List.of(command), Map.of(), Map.of(), List.of(), List.of(), false);
        }

        public Spec env(String name, String value) {
            Map<String, String> more = new LinkedHashMap<>(env);
            more.put(name, value);
            return new Spec(command, more, annotations, mounts, devices, readOnlyRoot);
        }

        public Spec annotation(String name, String value) {
            Map<String, String> more = new LinkedHashMap<>(annotations);
            more.put(name, value);
            return new Spec(command, env, more, mounts, devices, readOnlyRoot);
        }

        public Spec bind(String hostPath, String containerPath, boolean readOnly) {
            List<Mount> more = new ArrayList<>(mounts);
            more.add(Mount.newBuilder().setHostPath(hostPath).setContainerPath(containerPath).setReadonly(readOnly).build());
            return new Spec(command, env, annotations, more, devices, readOnlyRoot);
        }

        public Spec device(String path) {
            List<String> more = new ArrayList<>(devices);
            more.add(path);
            return new Spec(command, env, annotations, mounts, more, readOnlyRoot);
        }
    }

    /** CreateContainer with the kubelet's labels and annotations; returns the container's id. */
    public String createContainer(Sandbox sandbox, String name, String image, Spec spec) {
        return createContainer(sandbox, name, image, spec, Map.of());
    }

    /** The same with labels of the pod's own besides the kubelet's (a pod's author chooses them). */
    public String createContainer(Sandbox sandbox, String name, String image, Spec spec, Map<String, String> labels) {
        ContainerConfig.Builder config = ContainerConfig.newBuilder()
                .putAllLabels(labels)
                .setMetadata(ContainerMetadata.newBuilder().setName(name))
                .setImage(ImageSpec.newBuilder().setImage(image))
                .addAllCommand(spec.command())
                .putLabels("io.kubernetes.container.name", name)
                .putLabels("io.kubernetes.pod.name", sandbox.pod().name())
                .putLabels("io.kubernetes.pod.namespace", sandbox.pod().namespace())
                .putLabels("io.kubernetes.pod.uid", sandbox.pod().uid())
                .putAnnotations("io.kubernetes.container.hash", "1234abcd")
                .putAnnotations("io.kubernetes.container.restartCount", "0")
                .putAnnotations("io.kubernetes.container.terminationMessagePath", "/dev/termination-log")
                .putAnnotations("io.kubernetes.container.terminationMessagePolicy", "File")
                .putAnnotations("io.kubernetes.pod.terminationGracePeriod", "30")
                .putAllAnnotations(spec.annotations())
                .setLogPath(name + "/0.log")
                .addAllMounts(spec.mounts())
                .setLinux(LinuxContainerConfig.newBuilder().setSecurityContext(LinuxContainerSecurityContext.newBuilder()
                        .setNamespaceOptions(hostNetwork()).setReadonlyRootfs(spec.readOnlyRoot())));
        spec.env().forEach((k, v) -> config.addEnvs(KeyValue.newBuilder().setKey(k).setValue(v)));
        for (String device : spec.devices()) {
            config.addDevices(Device.newBuilder().setHostPath(device).setContainerPath(device).setPermissions("rw"));
        }
        return call(CREATE_CONTAINER, CreateContainerRequest.newBuilder().setPodSandboxId(sandbox.id()).setConfig(config)
                .setSandboxConfig(sandbox.config()).build()).getContainerId();
    }

    /**
     * What a container wrote to its CRI log file ({@code <pod log directory>/<name>/0.log}, where
     * the kubelet reads it), the CRI's prefixes (time, stream, partial or full) taken off; empty
     * before it wrote anything.
     */
    public String logs(Sandbox sandbox, String containerName) {
        Path file = Path.of(sandbox.config().getLogDirectory(), containerName, "0.log");
        StringBuilder text = new StringBuilder();
        try {
            if (!Files.exists(file)) {
                return "";
            }
            for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
                String[] parts = line.split(" ", 4);
                if (parts.length >= 3) {
                    text.append(parts.length == 4 ? parts[3] : "");
                    if (parts[2].equals("F")) {
                        text.append('\n');
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return text.toString();
    }

    public void startContainer(String id) {
        call(START_CONTAINER, ContainerIdRequest.newBuilder().setContainerId(id).build());
    }

    public void stopContainer(String id, long timeoutSeconds) {
        call(STOP_CONTAINER, StopContainerRequest.newBuilder().setContainerId(id).setTimeout(timeoutSeconds).build());
    }

    public void removeContainer(String id) {
        call(REMOVE_CONTAINER, ContainerIdRequest.newBuilder().setContainerId(id).build());
    }

    public ContainerStatus containerStatus(String id) {
        return call(CONTAINER_STATUS, ContainerIdRequest.newBuilder().setContainerId(id).build()).getStatus();
    }

    public List<String> containerIds(String sandboxId) {
        return call(LIST_CONTAINERS, ListContainersRequest.newBuilder().setFilter(ContainerFilter.newBuilder()
                .setPodSandboxId(sandboxId)).build()).getContainersList().stream().map(c -> c.getId()).toList();
    }

    /**
     * Whether the CRI's own image store knows {@code image}. containerd's CRI learns of an image
     * imported with {@code ctr} from the image's create event, handled apart from the import: a
     * CreateContainer right after the import can find no image ("failed to resolve image").
     */
    public boolean hasImage(String image) {
        return call(IMAGE_STATUS, ImageStatusRequest.newBuilder().setImage(ImageSpec.newBuilder().setImage(image)).build())
                .hasImage();
    }

    /** StopPodSandbox then RemovePodSandbox, as the kubelet does when a pod goes away (its containers go too). */
    public void removePod(Sandbox sandbox) {
        call(STOP_POD_SANDBOX, PodSandboxIdRequest.newBuilder().setPodSandboxId(sandbox.id()).build());
        call(REMOVE_POD_SANDBOX, PodSandboxIdRequest.newBuilder().setPodSandboxId(sandbox.id()).build());
    }

    /** The kubelet's namespaces for a hostNetwork pod: the node's network, the pod's IPC, each container's own PIDs. */
    private static NamespaceOption hostNetwork() {
        return NamespaceOption.newBuilder().setNetwork(NamespaceMode.NODE).setPid(NamespaceMode.CONTAINER)
                .setIpc(NamespaceMode.POD).build();
    }

    @Override
    public void close() {
        channel.shutdownNow();
        loop.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
    }
}
