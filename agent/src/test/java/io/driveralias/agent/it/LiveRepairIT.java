package io.driveralias.agent.it;

import static io.driveralias.agent.testing.TestImages.DEBIAN_LIB;
import static io.driveralias.agent.testing.TestImages.RHEL_LIB;
import static io.driveralias.agent.testing.TestImages.VERSION;
import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.Processes;
import io.driveralias.agent.testing.TestImages;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The live agent against a real dockerd: the everyday cases. */
@Timeout(300)
class LiveRepairIT {

    static DockerHarness docker;
    static String debianImage;
    static String rhelImage;
    final List<String> containers = new ArrayList<>();

    @BeforeAll
    static void images() {
        docker = DockerHarness.get();
        debianImage = TestImages.image(docker, "debian-layout", DEBIAN_LIB, root -> { });
        rhelImage = TestImages.image(docker, "rhel-layout", RHEL_LIB, root -> { });
    }

    @AfterEach
    void removeContainers() {
        if (!containers.isEmpty()) {
            List<String> args = new ArrayList<>(List.of("rm", "-f"));
            args.addAll(containers);
            docker.tryRun(args.toArray(String[]::new));
        }
    }

    /** docker run -d with the driver files mounted as the NVIDIA runtime does. */
    String gpuContainer(String image, String libDir, String... options) {
        List<String> args = new ArrayList<>(List.of("run", "-d"));
        args.addAll(TestImages.driverMounts(libDir));
        args.addAll(List.of(options));
        args.addAll(List.of(image, "sleep", "600"));
        String id = docker.run(args.toArray(String[]::new));
        containers.add(id);
        return id;
    }

    Processes.Result exec(String id, String... cmd) {
        List<String> args = new ArrayList<>(List.of("exec", id));
        args.addAll(List.of(cmd));
        return docker.tryRun(args.toArray(String[]::new));
    }

    void awaitNvidiaSmi(String id) {
        AgentProcess.awaitTrue("nvidia-smi to work in " + id, Duration.ofSeconds(20),
                () -> exec(id, "nvidia-smi").exitCode() == 0);
    }

    @Test
    void withoutTheAgentNvidiaSmiFailsAndWithItItWorks() {
        String before = gpuContainer(debianImage, DEBIAN_LIB);
        Processes.Result broken = exec(before, "nvidia-smi");
        assertThat(broken.exitCode()).isNotZero();
        assertThat(broken.output()).contains("libnvidia-ml.so.1: cannot open shared object file");

        try (AgentProcess agent = AgentProcess.start(docker, "--ldconfig", "exec")) {
            agent.awaitLog("first reconcile", Duration.ofSeconds(30));
            String after = gpuContainer(debianImage, DEBIAN_LIB);

            awaitNvidiaSmi(after);
            assertThat(exec(after, "nvidia-smi").output()).contains("NVML initialised");
            assertThat(exec(after, "readlink", DEBIAN_LIB + "/libcuda.so.1").output().trim())
                    .isEqualTo("libcuda.so." + VERSION);
            assertThat(exec(after, "readlink", DEBIAN_LIB + "/libnvidia-nvvm.so.4").output().trim())
                    .isEqualTo("libnvidia-nvvm.so." + VERSION);
            AgentProcess.awaitTrue("ld.so.cache to list libcuda.so.1", Duration.ofSeconds(20),
                    () -> exec(after, "sh", "-c", "ldconfig -p | grep libcuda.so.1").exitCode() == 0);
            // The container that was already running is repaired by the startup reconcile.
            awaitNvidiaSmi(before);
            assertThat(agent.stop()).isZero();
        }
    }
}
