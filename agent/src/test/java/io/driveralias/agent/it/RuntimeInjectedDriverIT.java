package io.driveralias.agent.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Driver files added by the container's OCI runtime, as the NVIDIA runtime adds them (CDI
 * mode, or its legacy hook), not by {@code -v}: {@code docker inspect} shows no mount at all.
 * A test runtime ({@link GpuRuntimeDocker}) adds bind mounts of NVIDIA's real versioned files
 * to the bundle of every container whose environment asks for GPUs, then runs runc. The agent
 * finds them in the container's own mount table and repairs it.
 */
@Timeout(300)
class RuntimeInjectedDriverIT {

    @TempDir
    static Path tmp;
    static DockerHarness docker;

    @BeforeAll
    static void daemon() {
        docker = GpuRuntimeDocker.start(tmp);
    }

    @AfterAll
    static void stop() {
        if (docker != null) {
            docker.close();
        }
    }

    static final int FIRST_INSTRUCTION_RUNS = 10;

    /** nvidia-smi found NVML (no GPU here: it then finds no device) and libcuda.so.1 loaded. */
    private static boolean loadsAtFirstInstruction(String output) {
        return !output.contains("nvidia-smi=" + RealContainers.NVML_NOT_FOUND) && output.contains("cuInit 100");
    }

    @Test
    void driverFilesOnlyTheRuntimeKnowsAboutAreFoundAndRepaired() {
        try (RealContainers containers = new RealContainers(docker)) {
            String before = containers.startWithoutMounts("--runtime", "gpu", "--env", "NVIDIA_VISIBLE_DEVICES=all");
            assertThat(docker.run("inspect", "-f", "{{len .Mounts}} {{.HostConfig.Runtime}}", before))
                    .as("inspect knows nothing of the driver files").isEqualTo("0 gpu");
            containers.assertBroken(before);
            String noGpu = containers.startWithoutMounts("--runtime", "gpu", "--env", "NVIDIA_VISIBLE_DEVICES=void");
            assertThat(containers.exec(noGpu, "ls", RealContainers.LIB_DIR).output()).doesNotContain("libcuda");

            try (AgentProcess agent = AgentProcess.start(docker, "--ldconfig", "cache", "--gpu-runtime", "gpu")) {
                agent.awaitLog("first reconcile: 2 running", Duration.ofSeconds(30));
                containers.awaitWorking(before);
                String after = containers.startWithoutMounts("--runtime", "gpu", "--env", "NVIDIA_VISIBLE_DEVICES=0");
                containers.awaitWorking(after);
                assertThat(agent.logLines("repaired container " + after.substring(0, 12))).singleElement()
                        .asString().contains(": 9 link(s)");
                assertThat(agent.logLines("repaired container " + noGpu.substring(0, 12))).isEmpty();

                // The running containers showed which files the runtime adds: a new container
                // gets its aliases before its first instruction, docker run and create-then-start.
                List<String> runs = new ArrayList<>();
                for (int i = 0; i < FIRST_INSTRUCTION_RUNS; i++) {
                    runs.add(containers.startProbing("run", "--runtime", "gpu", "--env", "NVIDIA_VISIBLE_DEVICES=all"));
                }
                String created = containers.startProbing("create", "--runtime", "gpu", "--env", "NVIDIA_VISIBLE_DEVICES=0");
                Path upper = Path.of(docker.run("inspect", "-f", "{{.GraphDriver.Data.UpperDir}}", created));
                AgentProcess.awaitTrue("the alias in the writable layer of " + created, Duration.ofSeconds(10),
                        () -> Files.isSymbolicLink(upper.resolve(RealContainers.LIB_DIR.substring(1) + "/libcuda.so.1")));
                docker.run("start", created);
                String noGpuRun = containers.startProbing("run", "--runtime", "gpu", "--env", "NVIDIA_VISIBLE_DEVICES=void");
                int loaded = 0;
                int cached = 0;
                for (String id : runs) {
                    loaded += loadsAtFirstInstruction(containers.firstInstructions(id)) ? 1 : 0;
                    cached += containers.firstInstructions(id).contains("cache=yes") ? 1 : 0;
                }
                System.out.printf("[runtime-injected] docker run: the driver loads at the first instruction in %d of %d,"
                        + " ldconfig -p lists libcuda.so.1 in %d%n", loaded, runs.size(), cached);
                assertThat(loaded).as("docker run with the runtime's files: aliases at the first instruction")
                        .isEqualTo(runs.size());
                assertThat(cached).as("the loader cache lists them at the first instruction too").isEqualTo(runs.size());
                assertThat(loadsAtFirstInstruction(containers.firstInstructions(created))).as("create, then start").isTrue();
                assertThat(containers.firstInstructions(created)).as("create, then start: the cache lists the aliases")
                        .contains("cache=yes");
                int beforeStart = 0;
                List<String> atStart = new ArrayList<>();
                for (String id : runs) {
                    containers.awaitWorking(id);
                    agent.awaitLog("repaired container " + id.substring(0, 12), Duration.ofSeconds(30));
                    List<String> lines = agent.logLines("repaired container " + id.substring(0, 12) + " (");
                    if (lines.stream().anyMatch(l -> l.contains(") before start: "))) {
                        beforeStart++;
                    } else {
                        atStart.addAll(lines);
                    }
                }
                System.out.printf("[runtime-injected] docker run: reported repaired before start %d of %d%n",
                        beforeStart, runs.size());
                assertThat(beforeStart).as("the start path found everything in place; repaired at start instead: %s;"
                        + " the causes: %s", atStart, agent.logLines("after their first instruction")).isEqualTo(runs.size());
                // NVML only: aliases for what this capability set received before, nothing else.
                String utility = containers.startWithoutMounts("--runtime", "gpu", "--env", "NVIDIA_VISIBLE_DEVICES=all",
                        "--env", "NVIDIA_DRIVER_CAPABILITIES=utility");
                containers.awaitLink(utility, "libnvidia-ml.so.1");
                String utilityRun = containers.startProbing("run", "--runtime", "gpu", "--env", "NVIDIA_VISIBLE_DEVICES=all",
                        "--env", "NVIDIA_DRIVER_CAPABILITIES=utility");
                assertThat(containers.firstInstructions(utilityRun)).as("nvidia-smi at the first instruction")
                        .contains("nvidia-smi=").doesNotContain("nvidia-smi=" + RealContainers.NVML_NOT_FOUND)
                        .doesNotContain("nvidia-smi=127");
                agent.awaitLog("repaired container " + utilityRun.substring(0, 12) + " .* before start", Duration.ofSeconds(30));
                assertThat(containers.exec(utilityRun, "sh", "-c", "ls " + RealContainers.LIB_DIR + " | grep -cE 'nvidia|cuda'")
                        .output().trim()).as("libnvidia-ml.so.1 and its file, no alias to a file that never came")
                        .isEqualTo("2");
                assertThat(containers.firstInstructions(noGpuRun)).as("no GPU asked: nothing written")
                        .contains("nvidia-smi=127").contains("cache=no");
                assertThat(containers.exec(noGpuRun, "ls", RealContainers.LIB_DIR).output()).doesNotContain("libcuda")
                        .doesNotContain("libnvidia");
                assertThat(agent.logLines("WARN")).isEmpty();
                assertThat(agent.logLines("ERROR")).isEmpty();
            }
        }
    }
}
