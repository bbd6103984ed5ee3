package io.driveralias.agent.containerd;

import static io.driveralias.agent.containerd.Fixtures.CRI_CONTAINER;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import io.driveralias.agent.containerd.api.Container;
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

    private static OciSpec spec(Container container) throws IOException {
        return OciSpecParser.parse(container.getSpec().getValue().newInput());
    }

    private static Process task(String id, int pid, TaskStatus status) {
        return Process.newBuilder().setContainerId(id).setId(id).setPid(pid).setStatus(status).build();
    }

    @Test
    void aRecordedCriGpuContainerWithItsTaskJustCreated() throws IOException {
        Container container = Fixtures.container("cri-container.bin");
        ContainerInfo info = ContainerInfoMapper.map(container, spec(container), Optional.of(task(CRI_CONTAINER, 4242,
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
        Container sandbox = Fixtures.container("cri-sandbox.bin");
        ContainerInfo info = ContainerInfoMapper.map(sandbox, spec(sandbox), Optional.empty(), Optional.empty(), List.of(),
                CriSandboxRecord.runtimeHandler(sandbox), SETTINGS);
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
        Container container = Fixtures.container("ctr-container.bin");
        ContainerInfo info = ContainerInfoMapper.map(container, spec(container), Optional.of(task("ctr-one", 77,
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
        Container container = Fixtures.container("ctr-container.bin");
        ContainerInfo info = ContainerInfoMapper.map(container, spec(container), Optional.of(task("ctr-one", 77,
                TaskStatus.STOPPED)), Optional.of(STARTED), List.of(), Optional.empty(), SETTINGS);
        assertThat(info.running()).isFalse();
        assertThat(info.pid()).isZero();
        assertThat(info.startedAt()).isEmpty();
    }

    @Test
    void theGpuRuntimeIsNvidiasBinaryOrAConfiguredHandler() {
        OciSpec visible = new OciSpec(List.of("NVIDIA_VISIBLE_DEVICES=0"), OptionalLong.empty(), OptionalLong.empty(), List.of(),
                Map.of(), false, false);
        Container.Runtime runc = Container.Runtime.newBuilder().setName("io.containerd.runc.v2").build();
        assertThat(ContainerInfoMapper.gpu(runc, visible, Optional.empty(), Set.of("nvidia")).addsDriverFiles()).isFalse();
        assertThat(ContainerInfoMapper.gpu(runc, visible, Optional.of("nvidia"), Set.of("nvidia")).addsDriverFiles()).isTrue();
        assertThat(ContainerInfoMapper.gpu(runc, visible, Optional.of("runc"), Set.of("nvidia")).addsDriverFiles()).isFalse();
        OciSpec handlerAnnotation = new OciSpec(visible.gpuEnvironment(), OptionalLong.empty(), OptionalLong.empty(), List.of(),
                Map.of(ContainerInfoMapper.CRI_RUNTIME_HANDLER, "gpu"), false, false);
        assertThat(ContainerInfoMapper.gpu(runc, handlerAnnotation, Optional.of("runc"), Set.of("gpu")).addsDriverFiles()).isTrue();
        for (String binary : List.of("/usr/local/nvidia/toolkit/nvidia-container-runtime", "/usr/bin/nvidia-container-runtime.cdi",
                "nvidia-container-runtime-experimental")) {
            Container.Runtime nvidia = runc.toBuilder().setOptions(Any.newBuilder().setTypeUrl("containerd.runc.v1.Options")
                    .setValue(RuncOptions.newBuilder().setBinaryName(binary).build().toByteString())).build();
            GpuRequest gpu = ContainerInfoMapper.gpu(nvidia, visible, Optional.empty(), Set.of());
            assertThat(gpu.runtime()).isEqualTo(binary);
            assertThat(gpu.addsDriverFiles()).as(binary).isTrue();
        }
        Container.Runtime notNvidia = runc.toBuilder().setOptions(Any.newBuilder().setTypeUrl("containerd.runc.v1.Options")
                .setValue(RuncOptions.newBuilder().setBinaryName("/opt/nvidia-container-runtime/crun").build().toByteString())).build();
        assertThat(ContainerInfoMapper.gpu(notNvidia, visible, Optional.empty(), Set.of()).gpuRuntime()).isFalse();
    }

    @Test
    void runtimeOptionsOfEachKindAndBrokenOnes() {
        assertThat(ContainerInfoMapper.binaryName(Any.newBuilder().setTypeUrl("types.googleapis.com/containerd.runc.v1.Options")
                .setValue(RuncOptions.newBuilder().setBinaryName("/x/runc").build().toByteString()).build())).contains("/x/runc");
        assertThat(ContainerInfoMapper.binaryName(Any.newBuilder().setTypeUrl("containerd.linux.runc.RuncOptions")
                .setValue(LinuxRuncOptions.newBuilder().setRuntime("nvidia-container-runtime").build().toByteString()).build()))
                .contains("nvidia-container-runtime");
        assertThat(ContainerInfoMapper.binaryName(Any.getDefaultInstance())).isEmpty();
        assertThat(ContainerInfoMapper.binaryName(Any.newBuilder().setTypeUrl("containerd.runc.v1.Options")
                .setValue(ByteString.copyFrom(new byte[] {(byte) 0xff, (byte) 0xff})).build())).isEmpty();
        assertThat(ContainerInfoMapper.binaryName(Any.newBuilder().setTypeUrl("runtimeoptions.v1.Options")
                .setValue(ByteString.copyFromUtf8("\n\u0003abc")).build())).isEmpty();
    }

    @Test
    void cdiAnnotationsAskForNvidiaDevicesOnly() {
        Container.Runtime runc = Container.Runtime.newBuilder().setName("io.containerd.runc.v2").build();
        for (var annotation : Map.of("cdi.k8s.io/a", "vendor.com/fpga=0", "cdi.k8s.io/b", "", "other/x", "nvidia.com/gpu=0")
                .entrySet()) {
            OciSpec spec = new OciSpec(List.of(), OptionalLong.empty(), OptionalLong.empty(), List.of(),
                    Map.of(annotation.getKey(), annotation.getValue()), false, false);
            assertThat(ContainerInfoMapper.gpu(runc, spec, Optional.empty(), Set.of()).deviceRequest()).as(annotation.toString())
                    .isFalse();
        }
        OciSpec several = new OciSpec(List.of(), OptionalLong.empty(), OptionalLong.empty(), List.of(),
                Map.of("cdi.k8s.io/p", "vendor.com/x=1, nvidia.com/mig=0:1"), false, false);
        assertThat(ContainerInfoMapper.gpu(runc, several, Optional.empty(), Set.of()).deviceRequest()).isTrue();
    }

    @Test
    void onlyAnOverlayMountOfTheOverlayfsSnapshotterGivesLayers() {
        Container container = Container.newBuilder().setId("c").setSnapshotter("overlayfs").build();
        Mount bind = Mount.newBuilder().setType("bind").setSource("/var/lib/x/fs").addOptions("rbind").build();
        assertThat(ContainerInfoMapper.overlay(container, List.of(bind), SETTINGS)).isEmpty();
        assertThat(ContainerInfoMapper.overlay(container, List.of(), SETTINGS)).isEmpty();
        assertThat(ContainerInfoMapper.overlay(container.toBuilder().setSnapshotter("native").build(),
                Fixtures.criContainerMounts(), SETTINGS)).isEmpty();
    }
}
