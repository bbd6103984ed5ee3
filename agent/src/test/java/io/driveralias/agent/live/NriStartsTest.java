package io.driveralias.agent.live;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.live.NriStarts.Ask;
import io.driveralias.agent.live.NriStarts.DriverPaths;
import io.driveralias.agent.nri.NriContainer;
import io.driveralias.agent.nri.NriMount;
import io.driveralias.agent.nri.NriPod;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Which starts NRI's call alone answers at once: every one that shows no way to ask for a GPU;
 * and what the runtime's reading thread may look at to decide: strings only, never a file.
 */
class NriStartsTest {

    private static final Set<String> GPU_RUNTIMES = Set.of("nvidia");
    private static final String HOST_FILE = "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05";
    private static final NriPod POD = new NriPod("s", "p", "u", "ns", "", 0);

    /** The paths each predicate was asked about, so a test can say which of them did I/O. */
    private final List<String> stats = new ArrayList<>();
    private final DriverPaths paths = new DriverPaths(HOST_FILE::equals, path -> {
        stats.add(path);
        return path.equals(HOST_FILE) || path.equals("/run/nvidia/driver/usr/lib/libcuda.so.535.104.05");
    });

    private static NriContainer container(List<String> env, Map<String, String> annotations, List<NriMount> mounts,
                                          boolean devices) {
        return new NriContainer("c", "s", "main", "", NriContainer.State.CREATED, 42, Map.of(), annotations, env, mounts, devices, false,
                0, false);
    }

    private static NriMount bind(String source) {
        return new NriMount("/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05", "bind", source, List.of("rbind", "ro"));
    }

    private Ask ask(NriPod pod, NriContainer c) {
        return NriStarts.ask(pod, c, GPU_RUNTIMES, paths);
    }

    @Test
    void aPlainContainerShowsNoAsk() {
        assertThat(ask(POD, container(List.of(), Map.of(), List.of(), false))).isEqualTo(Ask.NONE);
        assertThat(ask(POD, container(List.of("NVIDIA_VISIBLE_DEVICES=void"), Map.of(), List.of(), false))).isEqualTo(Ask.NONE);
        assertThat(ask(POD, container(List.of("NVIDIA_VISIBLE_DEVICES="), Map.of(), List.of(), false))).isEqualTo(Ask.NONE);
        assertThat(ask(POD, container(List.of("NVIDIA_REQUIRE_CUDA=cuda>=12"), Map.of(), List.of(), false))).isEqualTo(Ask.NONE);
        assertThat(ask(POD, container(List.of(), Map.of("cdi.k8s.io/x", "vendor.com/fpga=0"), List.of(), false)))
                .isEqualTo(Ask.NONE);
        assertThat(ask(POD, container(List.of(), Map.of(), List.of(new NriMount("/data", "bind", "/srv/data", List.of("rbind"))),
                false))).as("a bind not named like a driver file").isEqualTo(Ask.NONE);
    }

    @Test
    void anyWayToAskForAGpuTheCallShowsIsAGpuAsk() {
        assertThat(ask(POD, container(List.of("NVIDIA_VISIBLE_DEVICES=all"), Map.of(), List.of(), false))).isEqualTo(Ask.GPU);
        assertThat(ask(POD, container(List.of(), Map.of(), List.of(), true))).as("/dev/nvidia*").isEqualTo(Ask.GPU);
        assertThat(ask(POD, container(List.of(), Map.of("cdi.k8s.io/gpu", "vendor.com/x=1,nvidia.com/gpu=0"), List.of(), false)))
                .isEqualTo(Ask.GPU);
        assertThat(ask(new NriPod("s", "p", "u", "ns", "nvidia", 0), container(List.of(), Map.of(), List.of(), false)))
                .as("a GPU runtime handler").isEqualTo(Ask.GPU);
        assertThat(ask(POD, container(List.of(), Map.of(), List.of(bind(HOST_FILE)), false)))
                .as("a bind of the host's own driver file, by its path").isEqualTo(Ask.GPU);
        assertThat(ask(POD, new NriContainer("c", "s", "main", "", NriContainer.State.CREATED, 42, Map.of(), Map.of(), List.of(),
                List.of(), false, false, 1, false))).as("a call cut by its bounds: the record decides").isEqualTo(Ask.GPU);
    }

    @Test
    void aContainerGivenOneOfNvidiasCdiDevicesByTheRuntimeAsksForAGpu() {
        // NRI 0.12 (containerd 2.3) passes the container's CDI devices: the device plugin's nvidia.com/gpu=0.
        NriContainer cdi = new NriContainer("c", "s", "main", "", NriContainer.State.CREATED, 42, Map.of(), Map.of(), List.of(),
                List.of(), false, true, 0, false);
        assertThat(ask(POD, cdi)).isEqualTo(Ask.GPU);
    }

    @Test
    void aDriverNamedBindFromAnUnknownSourceIsUnsureAndOnlyTheCallThreadLooksAtTheFile() {
        NriContainer elsewhere = container(List.of(), Map.of(), List.of(bind("/run/nvidia/driver/usr/lib/libcuda.so.535.104.05")),
                false);
        NriContainer copy = container(List.of(), Map.of(), List.of(bind("/srv/copy/libcuda.so.535.104.05")), false);

        assertThat(ask(POD, elsewhere)).isEqualTo(Ask.UNSURE);
        assertThat(ask(POD, copy)).isEqualTo(Ask.UNSURE);
        assertThat(stats).as("no stat on the runtime's reading thread").isEmpty();

        assertThat(NriStarts.bindsHostDriverFile(elsewhere, paths)).as("another path to the host's file").isTrue();
        assertThat(NriStarts.bindsHostDriverFile(copy, paths)).as("not the host's file").isFalse();
        assertThat(stats).containsExactly("/run/nvidia/driver/usr/lib/libcuda.so.535.104.05", "/srv/copy/libcuda.so.535.104.05");
    }
}
