package io.driveralias.agent.containerd;

import io.driveralias.agent.containerd.api.Envelope;
import io.driveralias.agent.containerd.api.GetContainerRequest;
import io.driveralias.agent.containerd.api.GetContainerResponse;
import io.driveralias.agent.containerd.api.MountsRequest;
import io.driveralias.agent.containerd.api.SubscribeRequest;
import io.driveralias.agent.testing.ContainerdHarness;
import io.driveralias.agent.testing.CriClient;
import io.driveralias.agent.testing.TestImages;
import io.driveralias.agent.grpc.GrpcException;
import io.driveralias.agent.grpc.GrpcMethod;
import io.driveralias.agent.grpc.ServerStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/**
 * Records the payloads of {@code src/test/resources/containerd/} from a real private containerd
 * (ContainerdHarness), as protobuf's wire format: a CRI GPU container's record and its
 * snapshot's mounts, its pod's sandbox, a {@code ctr run} container, and every event of
 * namespace k8s.io meanwhile (length-delimited envelopes). Not a test; run as root from the
 * agent module with the test classpath: {@code java -cp ... ContainerdFixtureRecorder DIR}.
 */
public final class ContainerdFixtureRecorder {

    /** The whole record as containerd sends it (the agent reads it streaming, keeping a few fields). */
    private static final GrpcMethod<GetContainerRequest, GetContainerResponse> GET_CONTAINER = new GrpcMethod<>(
            "containerd.services.containers.v1.Containers/Get", (in, offset, length) -> GetContainerResponse.parseFrom(
                    com.google.protobuf.CodedInputStream.newInstance(in, offset, length)), ContainerdClient.MAX_MESSAGE);

    private static final Duration DEADLINE = Duration.ofSeconds(5);

    private ContainerdFixtureRecorder() {
    }

    public static void main(String[] args) throws Exception {
        Path out = Files.createDirectories(Path.of(args[0]));
        ContainerdHarness containerd = ContainerdHarness.get();
        String image = containerd.image(ContainerdHarness.K8S, "plain", TestImages.DEBIAN_LIB, root -> { }, "/bin/sh");
        try (ContainerdClient client = new ContainerdClient(containerd.socket(), ContainerdHarness.K8S);
             OutputStream events = Files.newOutputStream(out.resolve("events.bin"))) {
            ServerStream<Envelope> stream = client.streamInNamespace(ContainerdRpc.SUBSCRIBE,
                    SubscribeRequest.newBuilder().addFilters("namespace==\"k8s.io\"").build(), DEADLINE);
            Thread recorder = Thread.ofPlatform().daemon().start(() -> {
                try {
                    for (Envelope envelope = stream.next(Long.MAX_VALUE); ; envelope = stream.next(Long.MAX_VALUE)) {
                        envelope.writeDelimitedTo(events);
                    }
                } catch (GrpcException | InterruptedException e) {
                    // the stream is closed
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
            Thread.sleep(500);

            CriClient cri = containerd.cri();
            CriClient.Sandbox pod = cri.runPodSandbox(CriClient.Pod.named("gpu-pod"), "nvidia");
            String id = cri.createContainer(pod, "cuda", image, CriClient.Spec.of("/bin/sh", "-c", "sleep 1")
                    .env("NVIDIA_VISIBLE_DEVICES", "all").env("NVIDIA_DRIVER_CAPABILITIES", "compute,utility")
                    .annotation("cdi.k8s.io/nvidia-device-plugin_uuid", "nvidia.com/gpu=0")
                    .bind("/etc/hostname", "/etc/host-name", true));
            record(out.resolve("cri-container.bin"), client.callInNamespace(GET_CONTAINER,
                    GetContainerRequest.newBuilder().setId(id).build(), DEADLINE).toByteArray());
            record(out.resolve("cri-sandbox.bin"), client.callInNamespace(GET_CONTAINER,
                    GetContainerRequest.newBuilder().setId(pod.id()).build(), DEADLINE).toByteArray());
            record(out.resolve("cri-container-mounts.bin"), client.callInNamespace(ContainerdRpc.SNAPSHOT_MOUNTS,
                    MountsRequest.newBuilder().setSnapshotter("overlayfs").setKey(id).build(), DEADLINE).toByteArray());
            cri.startContainer(id);
            Thread.sleep(2000);
            cri.removeContainer(id);
            cri.removePod(pod);

            containerd.ctrRun(ContainerdHarness.K8S, image, "ctr-one", "/bin/sh", "-c", "sleep 2");
            containerd.run("-n", ContainerdHarness.K8S, "tasks", "exec", "--exec-id", "probe", "ctr-one", "/bin/true");
            record(out.resolve("ctr-container.bin"), client.callInNamespace(GET_CONTAINER,
                    GetContainerRequest.newBuilder().setId("ctr-one").build(), DEADLINE).toByteArray());
            Thread.sleep(2500);
            containerd.run("-n", ContainerdHarness.K8S, "tasks", "delete", "ctr-one");
            containerd.run("-n", ContainerdHarness.K8S, "containers", "delete", "ctr-one");
            Thread.sleep(500);
            stream.close();
            recorder.join(5000);
        }
        System.exit(0);
    }

    private static void record(Path file, byte[] bytes) throws IOException {
        Files.write(file, bytes);
    }
}
