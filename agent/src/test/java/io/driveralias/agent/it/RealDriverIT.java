package io.driveralias.agent.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.Processes;
import io.driveralias.agent.testing.RealDriver;
import io.driveralias.agent.testing.RealDriver.Arch;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The real thing: NVIDIA's own {@code nvidia-smi} and driver libraries (Debian's 535.x
 * packages) mounted at their versioned names only, as the NVIDIA runtime mounts them, into a
 * real debootstrapped Debian bookworm (glibc's ld.so and ldconfig, python3). No GPU here, so
 * "works" means the real libraries loaded: nvidia-smi gets past its library search (it then
 * reports no device) and {@code cuInit(0)} answers CUDA_ERROR_NO_DEVICE (100).
 */
@Timeout(300)
class RealDriverIT {

    /** nvidia-smi's exit code when it cannot dlopen libnvidia-ml.so.1. */
    private static final int NVML_NOT_FOUND = 12;
    private static final String CU_INIT = "import ctypes; print('cuInit', ctypes.CDLL('libcuda.so.1').cuInit(0))";

    static DockerHarness docker;
    static String image;
    static String libDir = Arch.AMD64.libDir();
    final List<String> started = new ArrayList<>();

    @BeforeAll
    static void fixtures() {
        docker = DockerHarness.get();
        image = RealDriver.debianImage(docker);
    }

    @AfterEach
    void remove() {
        if (!started.isEmpty()) {
            List<String> args = new ArrayList<>(List.of("rm", "-f"));
            args.addAll(started);
            docker.tryRun(args.toArray(String[]::new));
        }
    }

    @Test
    void realNvidiaSmiAndCudaLoadOnlyAfterTheAgent() {
        String before = start();
        Processes.Result smi = exec(before, "nvidia-smi");
        assertThat(smi.exitCode()).as(smi.output()).isEqualTo(NVML_NOT_FOUND);
        assertThat(smi.output()).contains("couldn't find libnvidia-ml.so");
        Processes.Result cuda = exec(before, "python3", "-c", CU_INIT);
        assertThat(cuda.output()).contains("libcuda.so.1: cannot open shared object file");

        try (AgentProcess agent = AgentProcess.start(docker, "--ldconfig", "exec")) {
            agent.awaitLog("first reconcile", Duration.ofSeconds(30));
            String after = start();
            for (String id : List.of(after, before)) {
                awaitLink(id, "libnvidia-ml.so.1", "libnvidia-ml.so." + RealDriver.version(Arch.AMD64));
                awaitLink(id, "libcuda.so.1", "libcuda.so." + RealDriver.version(Arch.AMD64));
                Processes.Result loaded = exec(id, "nvidia-smi");
                assertThat(loaded.exitCode()).as(loaded.output()).isNotEqualTo(NVML_NOT_FOUND).isNotZero();
                assertThat(loaded.output()).doesNotContain("couldn't find libnvidia-ml.so");
                assertThat(exec(id, "python3", "-c", CU_INIT).output().trim()).isEqualTo("cuInit 100");
            }
            // Every versioned library the runtime mounted got its SONAME alias.
            String listing = exec(after, "ls", libDir).output();
            assertThat(listing).contains("libnvidia-ptxjitcompiler.so.1", "libnvidia-nvvm.so.4",
                    "libnvidia-allocator.so.1", "libnvidia-cfg.so.1", "libnvidia-encode.so.1", "libnvcuvid.so.1",
                    "libcudadebugger.so.1");
            assertThat(agent.logLines("ERROR")).isEmpty();
            assertThat(agent.stop()).isZero();
        }
    }

    /**
     * {@code ldconfig -p} (NVIDIA's entrypoints grep it for libcuda.so.1) lists the aliases
     * once the agent refreshed the container's ld.so.cache. The test itself reads the cache
     * with the image's real glibc {@code ldconfig -p}; the agent's refresh mechanism is its own.
     */
    @Test
    void ldconfigListsTheAliasesAfterTheAgentsRefresh() {
        try (AgentProcess agent = AgentProcess.start(docker, "--ldconfig", "exec")) {
            agent.awaitLog("first reconcile", Duration.ofSeconds(30));
            String id = start();
            assertThat(exec(id, "sh", "-c", "ldconfig -p | grep -c 'libcuda.so.1 '").output().trim())
                    .as("before the repair reaches it, or just after").isIn("0", "1");
            awaitLink(id, "libcuda.so.1", "libcuda.so." + RealDriver.version(Arch.AMD64));
            // Merged /usr: glibc's ldconfig scans /lib first and names the aliases by that path.
            Pattern cuda = entry("libcuda.so.1");
            Pattern nvml = entry("libnvidia-ml.so.1");
            String cache = "";
            for (long end = System.nanoTime() + Duration.ofSeconds(20).toNanos(); System.nanoTime() < end; ) {
                cache = exec(id, "ldconfig", "-p").output();
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

    private String start() {
        List<String> args = new ArrayList<>(List.of("run", "-d"));
        args.addAll(RealDriver.mounts(libDir));
        args.addAll(List.of(image, "sleep", "600"));
        String id = docker.run(args.toArray(String[]::new));
        started.add(id);
        return id;
    }

    private Processes.Result exec(String id, String... cmd) {
        List<String> args = new ArrayList<>(List.of("exec", id));
        args.addAll(List.of(cmd));
        return docker.tryRun(args.toArray(String[]::new));
    }

    private void awaitLink(String id, String alias, String target) {
        AgentProcess.awaitTrue(alias + " -> " + target + " in " + id, Duration.ofSeconds(20),
                () -> target.equals(exec(id, "readlink", libDir + "/" + alias).output().trim()));
    }
}
