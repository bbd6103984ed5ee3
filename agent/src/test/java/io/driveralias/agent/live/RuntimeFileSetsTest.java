package io.driveralias.agent.live;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.DriverLibrary;
import io.driveralias.agent.core.GpuRequest;
import io.driveralias.agent.repair.LoaderCache;
import io.driveralias.agent.repair.RepairReport;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** What the runtime's file sets learn, and from whom: only runtime GPU requests, only what the runtime added. */
class RuntimeFileSetsTest {

    private static final String LIB = "/usr/lib/x86_64-linux-gnu";
    private static final DriverLibrary CUDA = new DriverLibrary(LIB, "libcuda.so.535.104.05", "libcuda.so.1");
    private static final DriverLibrary NVML = new DriverLibrary(LIB, "libnvidia-ml.so.535.104.05", "libnvidia-ml.so.1");

    private static GpuRequest asking(String capabilities) {
        return GpuRequest.of("nvidia", true, List.of("NVIDIA_VISIBLE_DEVICES=all",
                "NVIDIA_DRIVER_CAPABILITIES=" + capabilities), false, false);
    }

    private static ContainerInfo container(GpuRequest gpu, ContainerInfo.Mount... declared) {
        return ContainerInfo.builder("c").gpu(gpu).mounts(List.of(declared)).build();
    }

    /** A start's report: the host's driver files found in the container. */
    private static RepairReport found(DriverLibrary... files) {
        return new RepairReport(Optional.of("535.104.05"), List.of(), List.of(), LoaderCache.Status.NOT_CHECKED,
                List.of(files));
    }

    @Test
    void eachCapabilitySetGetsTheFilesItGotBefore() {
        RuntimeFileSets sets = new RuntimeFileSets();
        sets.record(container(asking("utility")), found(NVML));
        sets.record(container(asking("compute,utility")), found(CUDA, NVML));

        assertThat(sets.expected(asking("utility"))).containsOnlyKeys(NVML.fileName());
        assertThat(sets.expected(asking("utility,compute"))).containsExactlyInAnyOrderEntriesOf(Map.of(
                CUDA.fileName(), "libcuda.so.1", NVML.fileName(), "libnvidia-ml.so.1"));
        assertThat(sets.expected(asking("graphics"))).as("never seen: nothing guessed").isEmpty();
    }

    @Test
    void aContainerThatDidNotAskTheRuntimeTeachesNothing() {
        RuntimeFileSets sets = new RuntimeFileSets();
        sets.record(container(asking("all")), found(CUDA, NVML));
        // Declared binds of the host's libcuda, under plain runc: its files are its own doing.
        sets.record(container(GpuRequest.NONE, new ContainerInfo.Mount("bind", "/usr/lib/x86_64-linux-gnu/"
                + CUDA.fileName(), LIB + "/" + CUDA.fileName(), false)), found(CUDA));
        sets.record(container(GpuRequest.of("runc", false, List.of(), false, true)), found(CUDA));

        assertThat(sets.expected(asking("all"))).containsOnlyKeys(CUDA.fileName(), NVML.fileName());
    }

    @Test
    void filesTheContainerDeclaredItselfAreNotTheRuntimes() {
        RuntimeFileSets sets = new RuntimeFileSets();
        sets.record(container(asking("all"), new ContainerInfo.Mount("bind", "/somewhere/" + CUDA.fileName(),
                LIB + "/" + CUDA.fileName(), false)), found(CUDA, NVML));
        sets.record(container(asking("compute"), new ContainerInfo.Mount("volume", "/var/lib/docker/volumes/v",
                LIB, true)), found(CUDA));

        assertThat(sets.expected(asking("all"))).containsOnlyKeys(NVML.fileName());
        assertThat(sets.expected(asking("compute"))).as("everything under a declared mount").isEmpty();
    }

    @Test
    void aCapabilityListNoRuntimeWouldSendIsNotKept() {
        RuntimeFileSets sets = new RuntimeFileSets();
        String hostile = "x".repeat(RuntimeFileSets.MAX_CAPABILITIES_LENGTH + 1);
        sets.record(container(asking(hostile)), found(CUDA));

        assertThat(sets.expected(asking(hostile))).isEmpty();
    }

    @Test
    void aContainerWithoutRuntimeFilesChangesNothing() {
        RuntimeFileSets sets = new RuntimeFileSets();
        sets.record(container(asking("all")), found(CUDA));
        sets.record(container(asking("all")), found());

        assertThat(sets.expected(asking("all"))).containsOnlyKeys(CUDA.fileName());
    }
}
