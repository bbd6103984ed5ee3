package io.driveralias.agent.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** When the NVIDIA runtime will add the driver's files to a container, as its documentation defines it. */
class GpuRequestTest {

    private static final Set<String> GPU_RUNTIMES = Set.of("nvidia");

    private static GpuRequest env(String runtime, String... environment) {
        return GpuRequest.of(runtime, GPU_RUNTIMES.contains(runtime), List.of(environment), false, false);
    }

    @Test
    void aGpuRuntimeWithVisibleDevicesAddsTheDriver() {
        assertThat(env("nvidia", "PATH=/bin", "NVIDIA_VISIBLE_DEVICES=all").addsDriverFiles()).isTrue();
        assertThat(env("nvidia", "NVIDIA_VISIBLE_DEVICES=GPU-1f2e,GPU-3a4b").addsDriverFiles()).isTrue();
        assertThat(env("nvidia", "NVIDIA_VISIBLE_DEVICES=none").addsDriverFiles())
                .as("none: no device, but the driver's libraries").isTrue();
    }

    @Test
    void voidEmptyUnsetOrAnotherRuntimeAddNothing() {
        assertThat(env("nvidia", "NVIDIA_VISIBLE_DEVICES=void").addsDriverFiles()).isFalse();
        assertThat(env("nvidia", "NVIDIA_VISIBLE_DEVICES=").addsDriverFiles()).isFalse();
        assertThat(env("nvidia", "CUDA_VERSION=12.2").addsDriverFiles()).isFalse();
        assertThat(env("runc", "NVIDIA_VISIBLE_DEVICES=all").addsDriverFiles())
                .as("runc ignores the variable").isFalse();
        assertThat(env("nvidia", "NVIDIA_VISIBLE_DEVICES_X=all", "XNVIDIA_VISIBLE_DEVICES=all").addsDriverFiles())
                .isFalse();
        assertThat(GpuRequest.NONE.addsDriverFiles()).isFalse();
    }

    @Test
    void theLastDefinitionWinsAsInTheProcessEnvironment() {
        assertThat(env("nvidia", "NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_VISIBLE_DEVICES=void").addsDriverFiles())
                .isFalse();
        assertThat(GpuRequest.visibleDevices(List.of("NVIDIA_VISIBLE_DEVICES=void", "NVIDIA_VISIBLE_DEVICES=0")))
                .contains("0");
    }

    @Test
    void capabilitiesAreComparedAsSets() {
        assertThat(env("nvidia", "NVIDIA_DRIVER_CAPABILITIES= utility, compute,utility").capabilities())
                .isEqualTo("compute,utility");
        assertThat(env("nvidia", "NVIDIA_VISIBLE_DEVICES=all").capabilities()).as("unset").isEmpty();
    }

    @Test
    void aDockerDeviceRequestForGpusAddsTheDriverUnderAnyRuntime() {
        assertThat(GpuRequest.isGpuDeviceRequest("", List.of(List.of("gpu")), List.of())).as("--gpus all").isTrue();
        assertThat(GpuRequest.isGpuDeviceRequest("nvidia", List.of(), List.of())).isTrue();
        assertThat(GpuRequest.isGpuDeviceRequest("cdi", List.of(), List.of("nvidia.com/gpu=all"))).as("--device nvidia.com/gpu=all")
                .isTrue();
        assertThat(GpuRequest.isGpuDeviceRequest("", List.of(List.of("tpu"), List.of("compute")), List.of())).isFalse();
        assertThat(GpuRequest.isGpuDeviceRequest("cdi", List.of(), List.of("vendor.com/fpga=0"))).isFalse();
        assertThat(new GpuRequest("runc", false, Optional.empty(), true, false, "").addsDriverFiles()).isTrue();
    }

    @Test
    void nvidiaDeviceNodesAreARequestButAddNoFiles() {
        GpuRequest devices = GpuRequest.of("runc", false, List.of(), false, true);
        assertThat(devices.requested()).isTrue();
        assertThat(devices.addsDriverFiles()).as("whoever gave the devices gives the files: declared mounts").isFalse();
        assertThat(GpuRequest.isNvidiaDeviceNode("/dev/nvidia0")).isTrue();
        assertThat(GpuRequest.isNvidiaDeviceNode("/dev/nvidiactl")).isTrue();
        assertThat(GpuRequest.isNvidiaDeviceNode("/dev/fuse")).isFalse();
        assertThat(GpuRequest.NONE.requested()).isFalse();
        assertThat(env("nvidia", "NVIDIA_VISIBLE_DEVICES=all").requested()).isTrue();
    }
}
