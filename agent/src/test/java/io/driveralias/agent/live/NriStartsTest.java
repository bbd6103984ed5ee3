package io.driveralias.agent.live;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.nri.NriContainer;
import io.driveralias.agent.nri.NriMount;
import io.driveralias.agent.nri.NriPod;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;

/** Which starts NRI's call alone answers at once: every one that shows no way to ask for a GPU. */
class NriStartsTest {

    private static final Set<String> GPU_RUNTIMES = Set.of("nvidia");
    private static final Predicate<String> HOST_DRIVER = "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05"::equals;
    private static final NriPod POD = new NriPod("s", "p", "u", "ns", "", 0);

    private static NriContainer container(List<String> env, Map<String, String> annotations, List<NriMount> mounts,
                                          boolean devices) {
        return new NriContainer("c", "s", "main", NriContainer.State.CREATED, 42, Map.of(), annotations, env, mounts, devices, 0,
                false);
    }

    private static boolean asks(NriPod pod, NriContainer c) {
        return NriStarts.mayAskForGpu(pod, c, GPU_RUNTIMES, HOST_DRIVER);
    }

    @Test
    void aPlainContainerIsAnsweredAtOnce() {
        assertThat(asks(POD, container(List.of(), Map.of(), List.of(), false))).isFalse();
        assertThat(asks(POD, container(List.of("NVIDIA_VISIBLE_DEVICES=void"), Map.of(), List.of(), false))).isFalse();
        assertThat(asks(POD, container(List.of("NVIDIA_VISIBLE_DEVICES="), Map.of(), List.of(), false))).isFalse();
        assertThat(asks(POD, container(List.of("NVIDIA_REQUIRE_CUDA=cuda>=12"), Map.of(), List.of(), false))).isFalse();
        assertThat(asks(POD, container(List.of(), Map.of("cdi.k8s.io/x", "vendor.com/fpga=0"), List.of(), false))).isFalse();
        assertThat(asks(POD, container(List.of(), Map.of(), List.of(new NriMount("/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05",
                "bind", "/srv/copy/libcuda.so.535.104.05", List.of("rbind"))), false))).as("not the host's file").isFalse();
    }

    @Test
    void anyWayToAskForAGpuIsExamined() {
        assertThat(asks(POD, container(List.of("NVIDIA_VISIBLE_DEVICES=all"), Map.of(), List.of(), false))).isTrue();
        assertThat(asks(POD, container(List.of(), Map.of(), List.of(), true))).as("/dev/nvidia*").isTrue();
        assertThat(asks(POD, container(List.of(), Map.of("cdi.k8s.io/gpu", "vendor.com/x=1,nvidia.com/gpu=0"), List.of(), false)))
                .isTrue();
        assertThat(asks(new NriPod("s", "p", "u", "ns", "nvidia", 0), container(List.of(), Map.of(), List.of(), false)))
                .as("a GPU runtime handler").isTrue();
        assertThat(asks(POD, container(List.of(), Map.of(), List.of(new NriMount("/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05",
                "bind", "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05", List.of("rbind", "ro"))), false)))
                .as("a bind of the host's own driver file").isTrue();
        assertThat(asks(POD, new NriContainer("c", "s", "main", NriContainer.State.CREATED, 42, Map.of(), Map.of(), List.of(),
                List.of(), false, 1, false))).as("a call cut by its bounds: the record decides").isTrue();
    }

    @Test
    void withoutAProcessThereIsNothingToOpen() {
        assertThat(asks(POD, new NriContainer("c", "s", "main", NriContainer.State.CREATED, 0, Map.of(), Map.of(),
                List.of("NVIDIA_VISIBLE_DEVICES=all"), List.of(), true, 0, false))).isFalse();
    }
}
