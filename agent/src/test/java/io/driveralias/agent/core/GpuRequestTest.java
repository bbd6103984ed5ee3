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
        return GpuRequest.of(runtime, List.of(environment), false);
    }

    @Test
    void aGpuRuntimeWithVisibleDevicesAddsTheDriver() {
        assertThat(env("nvidia", "PATH=/bin", "NVIDIA_VISIBLE_DEVICES=all").addsDriverFiles(GPU_RUNTIMES)).isTrue();
        assertThat(env("nvidia", "NVIDIA_VISIBLE_DEVICES=GPU-1f2e,GPU-3a4b").addsDriverFiles(GPU_RUNTIMES)).isTrue();
        assertThat(env("nvidia", "NVIDIA_VISIBLE_DEVICES=none").addsDriverFiles(GPU_RUNTIMES))
                .as("none: no device, but the driver's libraries").isTrue();
    }

    @Test
    void voidEmptyUnsetOrAnotherRuntimeAddNothing() {
        assertThat(env("nvidia", "NVIDIA_VISIBLE_DEVICES=void").addsDriverFiles(GPU_RUNTIMES)).isFalse();
        assertThat(env("nvidia", "NVIDIA_VISIBLE_DEVICES=").addsDriverFiles(GPU_RUNTIMES)).isFalse();
        assertThat(env("nvidia", "CUDA_VERSION=12.2").addsDriverFiles(GPU_RUNTIMES)).isFalse();
        assertThat(env("runc", "NVIDIA_VISIBLE_DEVICES=all").addsDriverFiles(GPU_RUNTIMES))
                .as("runc ignores the variable").isFalse();
        assertThat(env("nvidia", "NVIDIA_VISIBLE_DEVICES_X=all", "XNVIDIA_VISIBLE_DEVICES=all").addsDriverFiles(GPU_RUNTIMES))
                .isFalse();
        assertThat(GpuRequest.NONE.addsDriverFiles(GPU_RUNTIMES)).isFalse();
    }

    @Test
    void theLastDefinitionWinsAsInTheProcessEnvironment() {
        assertThat(env("nvidia", "NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_VISIBLE_DEVICES=void").addsDriverFiles(GPU_RUNTIMES))
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
        assertThat(GpuRequest.isGpuDeviceRequest("", List.of(List.of("gpu")))).as("--gpus all").isTrue();
        assertThat(GpuRequest.isGpuDeviceRequest("nvidia", List.of())).isTrue();
        assertThat(GpuRequest.isGpuDeviceRequest("", List.of(List.of("tpu"), List.of("compute")))).isFalse();
        assertThat(new GpuRequest("runc", Optional.empty(), true, "").addsDriverFiles(GPU_RUNTIMES)).isTrue();
    }
}
