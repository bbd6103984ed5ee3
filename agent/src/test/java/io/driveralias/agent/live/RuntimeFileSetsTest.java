package io.driveralias.agent.live;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.core.GpuRequest;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A container gets aliases for the files the runtime gave the last container that asked the same. */
class RuntimeFileSetsTest {

    private static final Map<String, String> LEARNED = Map.of(
            "libcuda.so.535.104.05", "libcuda.so.1",
            "libnvidia-ml.so.535.104.05", "libnvidia-ml.so.1",
            "libGLX_nvidia.so.535.104.05", "libGLX_nvidia.so.0");

    private static GpuRequest asking(String capabilities) {
        return GpuRequest.of("nvidia", true, List.of("NVIDIA_VISIBLE_DEVICES=all",
                "NVIDIA_DRIVER_CAPABILITIES=" + capabilities), false, false);
    }

    @Test
    void eachCapabilitySetGetsTheFilesItGotBefore() {
        RuntimeFileSets sets = new RuntimeFileSets();
        sets.record(asking("utility"), List.of("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.535.104.05"));
        sets.record(asking("compute,utility"), List.of("/usr/lib64/libcuda.so.535.104.05",
                "/usr/lib64/libnvidia-ml.so.535.104.05"));

        assertThat(sets.expected(asking("utility"), LEARNED)).containsOnlyKeys("libnvidia-ml.so.535.104.05");
        assertThat(sets.expected(asking("utility,compute"), LEARNED))
                .containsOnlyKeys("libcuda.so.535.104.05", "libnvidia-ml.so.535.104.05");
        assertThat(sets.expected(asking("graphics"), LEARNED)).as("never seen: nothing guessed").isEmpty();
    }

    @Test
    void aFileWhoseSonameWasNeverReadIsLeftOut() {
        RuntimeFileSets sets = new RuntimeFileSets();
        sets.record(asking("all"), List.of("/usr/lib64/libcuda.so.535.104.05", "/usr/lib64/libnvcuvid.so.535.104.05"));

        assertThat(sets.expected(asking("all"), LEARNED)).containsExactly(Map.entry("libcuda.so.535.104.05", "libcuda.so.1"));
    }

    @Test
    void aCapabilityListNoRuntimeWouldSendIsNotKept() {
        RuntimeFileSets sets = new RuntimeFileSets();
        String hostile = "x".repeat(RuntimeFileSets.MAX_CAPABILITIES_LENGTH + 1);
        sets.record(asking(hostile), List.of("/usr/lib64/libcuda.so.535.104.05"));

        assertThat(sets.expected(asking(hostile), LEARNED)).isEmpty();
    }

    @Test
    void aContainerWithoutRuntimeFilesChangesNothing() {
        RuntimeFileSets sets = new RuntimeFileSets();
        sets.record(asking("all"), List.of("/usr/lib64/libcuda.so.535.104.05"));
        sets.record(asking("all"), List.of());

        assertThat(sets.expected(asking("all"), LEARNED)).containsOnlyKeys("libcuda.so.535.104.05");
    }
}
