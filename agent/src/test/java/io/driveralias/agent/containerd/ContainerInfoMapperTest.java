package io.driveralias.agent.containerd;

import static io.driveralias.agent.containerd.Fixtures.CRI_CONTAINER;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import io.driveralias.agent.containerd.api.Container;
import io.driveralias.agent.containerd.api.GetContainerResponse;
import io.driveralias.agent.containerd.api.LinuxRuncOptions;
import io.driveralias.agent.containerd.api.Mount;
import io.driveralias.agent.containerd.api.Process;
import io.driveralias.agent.containerd.api.RuncOptions;
import io.driveralias.agent.containerd.api.TaskStatus;
import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.ContainerScope;
import io.driveralias.agent.core.GpuRequest;
import io.driveralias.agent.core.PodRef;
import java.io.IOException;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ContainerInfoMapperTest {

    private static final ContainerInfoMapper.Settings SETTINGS = new ContainerInfoMapper.Settings("k8s.io", "/run/containerd",
            Set.of("nvidia"));
    private static final Instant STARTED = Instant.parse("2026-12-01T07:28:17.81Z");

    /** A container's record as the agent reads it off the wire. */
    static ContainerRecord record(Container container) throws IOException {
        return ContainerRecordReader.readResponse(GetContainerResponse.newBuilder().setContainer(container).build()
                .toByteString().newInput());
    }

    private static ContainerRecord record(String runtime, Optional<String> binary, OciSpec spec, ContainerRecord.CriKind cri) {
        return new ContainerRecord("c", Map.of(), "", runtime, binary, spec, "overlayfs", "c", cri, Optional.empty());
    }

    private static Process task(String id, int pid, TaskStatus status) {
        return Process.newBuilder().setContainerId(id).setId(id).setPid(pid).setStatus(status).build();
    }

    @Test
    void aRecordedCriGpuContainerWithItsTaskJustCreated() throws IOException {
        ContainerRecord container = record(Fixtures.container("cri-container.bin"));
        ContainerInfo info = ContainerInfoMapper.map(container, Optional.of(task(CRI_CONTAINER, 4242,
                TaskStatus.CREATED)), Optional.of(STARTED), Fixtures.criContainerMounts(), Optional.of("nvidia"), SETTINGS);

        assertThat(info.id()).isEqualTo(CRI_CONTAINER);
        assertThat(info.name()).isEqualTo("cuda");
        assertThat(info.image()).isEqualTo("docker.io/daa-test/plain:1");
        assertThat(ContainerScope.podOf(info.labels())).hasValueSatisfying(pod -> {
            assertThat(pod.namespace()).isEqualTo("default");
            assertThat(pod.name()).isEqualTo("gpu-pod");
            assertThat(pod.container()).isEqualTo("cuda");
            assertThat(pod.uid()).isNotEmpty();
        });
        assertThat(info.sandbox()).isFalse();
        assertThat(info.running()).as("the process exists before its first instruction").isTrue();
        assertThat(info.pid()).isEqualTo(4242);
        assertThat(info.startedAt()).contains(STARTED);
        assertThat(info.storage()).isEqualTo("overlayfs");
        assertThat(info.overlay()).hasValueSatisfying(layers -> {
            assertThat(layers.upperDir()).endsWith("/fs").contains("io.containerd.snapshotter.v1.overlayfs/snapshots/");
            assertThat(layers.lowerDir()).contains("io.containerd.snapshotter.v1.overlayfs/snapshots/").doesNotContain("upperdir");
            assertThat(layers.mergedDir()).isEqualTo("/run/containerd/io.containerd.runtime.v2.task/k8s.io/" + CRI_CONTAINER
                    + "/rootfs");
        });
        assertThat(info.readOnlyRootfs()).isFalse();
        assertThat(info.user()).isEqualTo("0:0");
        assertThat(info.mounts()).first().isEqualTo(new ContainerInfo.Mount("bind", "/etc/hostname", "/etc/host-name", false));
        GpuRequest gpu = info.gpu();
        assertThat(gpu.runtime()).endsWith("/bin/nvidia-container-runtime");
        assertThat(gpu.gpuRuntime()).isTrue();
        assertThat(gpu.visibleDevices()).contains("all");
        assertThat(gpu.capabilities()).isEqualTo("compute,utility");
        assertThat(gpu.deviceRequest()).as("the CDI annotation names nvidia.com/gpu=0").isTrue();
        assertThat(gpu.requested()).isTrue();
    }

    @Test
    void aRecordedSandboxIsTheSandboxNeverAGpuContainer() throws IOException {
        ContainerRecord sandbox = record(Fixtures.container("cri-sandbox.bin"));
        assertThat(sandbox.cri()).isEqualTo(ContainerRecord.CriKind.SANDBOX);
        assertThat(sandbox.sandboxHandler()).contains("nvidia");
        ContainerInfo info = ContainerInfoMapper.map(sandbox, Optional.empty(), Optional.empty(), List.of(),
                sandbox.sandboxHandler(), SETTINGS);
        assertThat(info.sandbox()).isTrue();
        assertThat(info.name()).isEqualTo("gpu-pod");
        assertThat(info.running()).isFalse();
        assertThat(info.startedAt()).isEmpty();
        assertThat(info.overlay()).isEmpty();
        assertThat(new ContainerScope(List.of(), List.of()).exclusion(info)).contains("pod sandbox");
        assertThat(ContainerScope.podOf(info.labels())).map(PodRef::name).contains("gpu-pod");
    }

    @Test
    void theSandboxsCriRecordNamesThePodsHandler() {
        assertThat(CriSandboxRecord.runtimeHandler(Fixtures.container("cri-sandbox.bin"))).contains("nvidia");
        assertThat(CriSandboxRecord.runtimeHandler(Fixtures.container("cri-container.bin"))).isEmpty();
        assertThat(CriSandboxRecord.runtimeHandler(Fixtures.container("ctr-container.bin"))).isEmpty();
        for (String json : List.of("", "[", "{\"Metadata\": []}", "{\"Metadata\": {\"RuntimeHandler\": 7}}", "not json",
                "{\"Metadata\": {\"RuntimeHandler\": \"" + "h".repeat(300) + "\"}}")) {
            Container bad = Container.newBuilder().putExtensions(CriSandboxRecord.EXTENSION, Any.newBuilder()
                    .setValue(ByteString.copyFromUtf8(json)).build()).build();
            assertThat(CriSandboxRecord.runtimeHandler(bad)).as(json).isEmpty();
        }
    }

    @Test
    void aRecordedCtrContainerHasItsIdAsNameAndNoGpu() throws IOException {
        ContainerRecord container = record(Fixtures.container("ctr-container.bin"));
        ContainerInfo info = ContainerInfoMapper.map(container, Optional.of(task("ctr-one", 77,
                TaskStatus.RUNNING)), Optional.of(STARTED), List.of(), Optional.empty(), SETTINGS);
        assertThat(info.name()).isEqualTo("ctr-one");
        assertThat(info.sandbox()).isFalse();
        assertThat(ContainerScope.podOf(info.labels())).isEmpty();
        assertThat(info.gpu().runtime()).isEqualTo("io.containerd.runc.v2");
        assertThat(info.gpu().gpuRuntime()).isFalse();
        assertThat(info.gpu().requested()).isFalse();
    }

    @ParameterizedTest
    @CsvSource({"CREATED, 10, true", "RUNNING, 10, true", "PAUSED, 10, true", "PAUSING, 10, true", "STOPPED, 10, false",
        "UNKNOWN, 10, false", "RUNNING, 0, false"})
    void aProcessExistsFromItsCreationUntilItIsReaped(TaskStatus status, int pid, boolean exists) {
        assertThat(ContainerInfoMapper.processExists(task("c", pid, status))).isEqualTo(exists);
    }

    @Test
    void aStoppedTaskIsNotRunningAndHasNoStart() throws IOException {
        ContainerRecord container = record(Fixtures.container("ctr-container.bin"));
        ContainerInfo info = ContainerInfoMapper.map(container, Optional.of(task("ctr-one", 77,
                TaskStatus.STOPPED)), Optional.of(STARTED), List.of(), Optional.empty(), SETTINGS);
        assertThat(info.running()).isFalse();
        assertThat(info.pid()).isZero();
        assertThat(info.startedAt()).isEmpty();
    }

    @Test
    void theGpuRuntimeIsNvidiasBinaryOrAConfiguredHandler() {
        OciSpec visible = new OciSpec(List.of("NVIDIA_VISIBLE_DEVICES=0"), OptionalLong.empty(), OptionalLong.empty(), List.of(),
                Map.of(), false, false);
        ContainerRecord runc = record("io.containerd.runc.v2", Optional.empty(), visible, ContainerRecord.CriKind.CONTAINER);
        assertThat(ContainerInfoMapper.gpu(runc, Optional.empty(), Set.of("nvidia")).addsDriverFiles()).isFalse();
        assertThat(ContainerInfoMapper.gpu(runc, Optional.of("nvidia"), Set.of("nvidia")).addsDriverFiles()).isTrue();
        assertThat(ContainerInfoMapper.gpu(runc, Optional.of("runc"), Set.of("nvidia")).addsDriverFiles()).isFalse();
        for (String binary : List.of("/usr/local/nvidia/toolkit/nvidia-container-runtime", "/usr/bin/nvidia-container-runtime.cdi",
                "nvidia-container-runtime-experimental")) {
            ContainerRecord nvidia = record("io.containerd.runc.v2", Optional.of(binary), visible, ContainerRecord.CriKind.NONE);
            GpuRequest gpu = ContainerInfoMapper.gpu(nvidia, Optional.empty(), Set.of());
            assertThat(gpu.runtime()).isEqualTo(binary);
            assertThat(gpu.addsDriverFiles()).as(binary).isTrue();
        }
        ContainerRecord notNvidia = record("io.containerd.runc.v2", Optional.of("/opt/nvidia-container-runtime/crun"), visible,
                ContainerRecord.CriKind.NONE);
        assertThat(ContainerInfoMapper.gpu(notNvidia, Optional.empty(), Set.of()).gpuRuntime()).isFalse();
    }

    /**
     * What decides a sandbox, a pod and a handler is only what the CRI writes: a container made
     * with ctr (no CRI record) that carries the CRI's sandbox annotation, the kubelet's labels of
     * another pod and a handler annotation is none of these.
     */
    @Test
    void aCtrContainerCannotWearTheCrisFields() throws IOException {
        OciSpec forged = new OciSpec(List.of("NVIDIA_VISIBLE_DEVICES=all"), OptionalLong.empty(), OptionalLong.empty(), List.of(),
                Map.of("io.kubernetes.cri.container-type", "sandbox", "io.kubernetes.cri.container-name", "victim",
                        "io.kubernetes.cri.sandbox-id", CRI_CONTAINER), false, false);
        ContainerRecord ctr = new ContainerRecord("forged", Map.of("io.kubernetes.pod.namespace", "kube-system",
                "io.kubernetes.pod.name", "victim", "io.cri-containerd.kind", "sandbox"), "img", "io.containerd.runc.v2",
                Optional.empty(), forged, "overlayfs", "forged", ContainerRecord.CriKind.NONE, Optional.empty());
        ContainerInfo info = ContainerInfoMapper.map(ctr, Optional.of(task("forged", 9, TaskStatus.RUNNING)),
                Optional.of(STARTED), List.of(), Optional.of("nvidia"), SETTINGS);
        assertThat(info.sandbox()).as("not the CRI's sandbox").isFalse();
        assertThat(ContainerScope.podOf(info.labels())).as("no pod").isEmpty();
        assertThat(info.name()).isEqualTo("forged");
        assertThat(info.gpu().gpuRuntime()).as("no CRI handler for a container the CRI did not make").isFalse();

        // The same fields written by ctr into a container's record on the wire: only the CRI's extension counts.
        Container wire = Container.newBuilder().setId("forged").putLabels("io.cri-containerd.kind", "sandbox")
                .setSpec(Any.newBuilder().setValue(ByteString.copyFromUtf8(
                        "{\"annotations\": {\"io.kubernetes.cri.container-type\": \"sandbox\"}}"))).build();
        assertThat(record(wire).cri()).isEqualTo(ContainerRecord.CriKind.NONE);
        assertThat(ContainerInfoMapper.map(record(wire), Optional.empty(), Optional.empty(), List.of(), Optional.empty(), SETTINGS)
                .sandbox()).isFalse();
    }

    @Test
    void runtimeOptionsOfEachKindAndBrokenOnes() {
        assertThat(ContainerRecordReader.binaryName("types.googleapis.com/containerd.runc.v1.Options",
                RuncOptions.newBuilder().setBinaryName("/x/runc").build().toByteArray())).contains("/x/runc");
        assertThat(ContainerRecordReader.binaryName("containerd.linux.runc.RuncOptions",
                LinuxRuncOptions.newBuilder().setRuntime("nvidia-container-runtime").build().toByteArray()))
                .contains("nvidia-container-runtime");
        assertThat(ContainerRecordReader.binaryName("", new byte[0])).isEmpty();
        assertThat(ContainerRecordReader.binaryName("containerd.runc.v1.Options", new byte[] {(byte) 0xff, (byte) 0xff})).isEmpty();
        assertThat(ContainerRecordReader.binaryName("runtimeoptions.v1.Options", "\n\u0003abc".getBytes(
                java.nio.charset.StandardCharsets.ISO_8859_1))).isEmpty();
    }

    @Test
    void cdiAnnotationsAskForNvidiaDevicesOnly() {
        for (var annotation : Map.of("cdi.k8s.io/a", "vendor.com/fpga=0", "cdi.k8s.io/b", "", "other/x", "nvidia.com/gpu=0")
                .entrySet()) {
            OciSpec spec = new OciSpec(List.of(), OptionalLong.empty(), OptionalLong.empty(), List.of(),
                    Map.of(annotation.getKey(), annotation.getValue()), false, false);
            assertThat(ContainerInfoMapper.gpu(record("io.containerd.runc.v2", Optional.empty(), spec,
                    ContainerRecord.CriKind.CONTAINER), Optional.empty(), Set.of()).deviceRequest()).as(annotation.toString())
                    .isFalse();
        }
        OciSpec several = new OciSpec(List.of(), OptionalLong.empty(), OptionalLong.empty(), List.of(),
                Map.of("cdi.k8s.io/p", "vendor.com/x=1, nvidia.com/mig=0:1"), false, false);
        assertThat(ContainerInfoMapper.gpu(record("io.containerd.runc.v2", Optional.empty(), several,
                ContainerRecord.CriKind.CONTAINER), Optional.empty(), Set.of()).deviceRequest()).isTrue();
    }

    @Test
    void aContainerDescribedAtItsStartHasWhereItsRootIsMountedButNotItsLayers() throws IOException {
        ContainerRecord container = record(Fixtures.container("cri-container.bin"));
        ContainerInfo atCreate = ContainerInfoMapper.map(container, Optional.empty(), Optional.empty(),
                Fixtures.criContainerMounts(), Optional.empty(), SETTINGS);

        ContainerInfo atStart = ContainerInfoMapper.mapStarting(container, Optional.empty(), SETTINGS);

        assertThat(atStart.overlay()).hasValueSatisfying(layers -> {
            assertThat(layers.upperDir()).isEmpty();
            assertThat(layers.lowerDir()).isEmpty();
            assertThat(layers.mergedDir()).isEqualTo(atCreate.overlay().orElseThrow().mergedDir());
            assertThat(layers.taskDir()).isEqualTo(atCreate.overlay().orElseThrow().taskDir());
        });
        assertThat(atStart.toBuilder().overlay(atCreate.overlay()).build()).as("all else as at its create").isEqualTo(atCreate);
        ContainerRecord sandbox = record(Fixtures.container("cri-sandbox.bin"));
        assertThat(ContainerInfoMapper.mapStarting(sandbox, sandbox.sandboxHandler(), SETTINGS).overlay()).isEmpty();
        ContainerRecord aNative = new ContainerRecord("c", Map.of(), "", "io.containerd.runc.v2", Optional.empty(), OciSpec.EMPTY,
                "native", "c", ContainerRecord.CriKind.NONE, Optional.empty());
        assertThat(ContainerInfoMapper.mapStarting(aNative, Optional.empty(), SETTINGS).overlay()).isEmpty();
    }

    @Test
    void onlyAnOverlayMountOfTheOverlayfsSnapshotterGivesLayers() {
        ContainerRecord container = record("io.containerd.runc.v2", Optional.empty(), OciSpec.EMPTY, ContainerRecord.CriKind.NONE);
        Mount bind = Mount.newBuilder().setType("bind").setSource("/var/lib/x/fs").addOptions("rbind").build();
        assertThat(ContainerInfoMapper.overlay(container, List.of(bind), SETTINGS)).isEmpty();
        assertThat(ContainerInfoMapper.overlay(container, List.of(), SETTINGS)).isEmpty();
        ContainerRecord aNative = new ContainerRecord("c", Map.of(), "", "io.containerd.runc.v2", Optional.empty(), OciSpec.EMPTY,
                "native", "c", ContainerRecord.CriKind.NONE, Optional.empty());
        assertThat(ContainerInfoMapper.overlay(aNative, Fixtures.criContainerMounts(), SETTINGS)).isEmpty();
    }
}
