package io.driveralias.agent.it;

import static io.driveralias.agent.it.RealContainers.LIB_DIR;
import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.SharedEngines;
import java.time.Duration;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * The real thing: NVIDIA's own {@code nvidia-smi} and driver libraries (Debian's 535.x
 * packages) mounted at their versioned names only, as the NVIDIA runtime mounts them, into a
 * real debootstrapped Debian bookworm (glibc's ld.so and ldconfig, python3). No GPU here, so
 * "works" means the real libraries loaded: nvidia-smi gets past its library search (it then
 * reports no device) and {@code cuInit(0)} answers CUDA_ERROR_NO_DEVICE (100).
 */
@Timeout(300)
@ResourceLock(SharedEngines.DOCKER)
class RealDriverIT {

    final DockerHarness docker = DockerHarness.get();
    RealContainers containers;

    @BeforeEach
    void containers() {
        containers = new RealContainers(docker);
    }

    @AfterEach
    void remove() {
        containers.close();
    }

    @Test
    void realNvidiaSmiAndCudaLoadOnlyAfterTheAgent() {
        String before = containers.start();
        containers.assertBroken(before);

        try (AgentProcess agent = AgentProcess.start(docker, "--ldconfig", "cache")) {
            agent.awaitLog("first reconcile", Duration.ofSeconds(30));
            String after = containers.start();
            for (String id : List.of(after, before)) {
                containers.awaitWorking(id);
            }
            // Every versioned library the runtime mounted got its SONAME alias.
            assertThat(containers.exec(after, "ls", LIB_DIR).output()).contains("libnvidia-ptxjitcompiler.so.1",
                    "libnvidia-nvvm.so.4", "libnvidia-allocator.so.1", "libnvidia-cfg.so.1", "libnvidia-encode.so.1",
                    "libnvcuvid.so.1", "libcudadebugger.so.1");
            assertThat(agent.logLines("ERROR")).isEmpty();
            assertThat(agent.stop()).isZero();
        }
    }

    /**
     * {@code ldconfig -p} (NVIDIA's entrypoints grep it for libcuda.so.1) lists the aliases
     * once the agent refreshed the container's ld.so.cache. The test reads the cache with the
     * image's real glibc {@code ldconfig -p}; how the agent refreshes it is the agent's business.
     */
    @Test
    void ldconfigListsTheAliasesAfterTheAgentsRefresh() {
        try (AgentProcess agent = AgentProcess.start(docker, "--ldconfig", "cache")) {
            agent.awaitLog("first reconcile", Duration.ofSeconds(30));
            String id = containers.start();
            containers.awaitLink(id, "libcuda.so.1");
            // Merged /usr: glibc's ldconfig scans /lib first and names the aliases by that path.
            Pattern cuda = entry("libcuda.so.1");
            Pattern nvml = entry("libnvidia-ml.so.1");
            String cache = "";
            for (long end = System.nanoTime() + Duration.ofSeconds(20).toNanos(); System.nanoTime() < end; ) {
                cache = containers.exec(id, "ldconfig", "-p").output();
                if (cuda.matcher(cache).find() && nvml.matcher(cache).find()) {
                    break;
                }
            }
            assertThat(cache).as(agent.log()).containsPattern(cuda).containsPattern(nvml);
        }
    }

    private static Pattern entry(String soname) {
        return Pattern.compile("\\s" + Pattern.quote(soname) + " \\(libc6,x86-64\\) => (/usr)?/lib/x86_64-linux-gnu/"
                + Pattern.quote(soname) + "\n");
    }
}
