package io.driveralias.agent.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.RealDriver;
import io.driveralias.agent.testing.RealDriver.Arch;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Driver files added by the container's OCI runtime, as the NVIDIA runtime adds them (CDI
 * mode, or its legacy hook), not by {@code -v}: {@code docker inspect} shows no mount at all.
 * A test runtime ({@code src/test/fixtures/gpu-runtime.sh}, registered with a second private
 * dockerd by {@code --add-runtime}) adds bind mounts of NVIDIA's real versioned files to the
 * bundle of every container whose environment asks for GPUs, then runs runc. The agent finds
 * them in the container's own mount table and repairs it.
 */
@Timeout(300)
class RuntimeInjectedDriverIT {

    @TempDir
    static Path tmp;
    static DockerHarness docker;

    @BeforeAll
    static void daemon() throws IOException {
        Path script = RealDriver.moduleDir().resolve("src/test/fixtures/gpu-runtime.sh");
        Path launcher = tmp.resolve("gpu-runtime");
        Files.writeString(launcher, "#!/bin/sh\nexec bash '" + script + "' '" + RealDriver.libraryDir(Arch.AMD64) + "' '"
                + RealContainers.LIB_DIR + "' '" + RealDriver.nvidiaSmi(Arch.AMD64) + "' \"$@\"\n");
        Files.setPosixFilePermissions(launcher, PosixFilePermissions.fromString("rwxr-xr-x"));
        docker = DockerHarness.startAnother("--add-runtime", "gpu=" + launcher);
    }

    @AfterAll
    static void stop() {
        if (docker != null) {
            docker.close();
        }
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

            try (AgentProcess agent = AgentProcess.start(docker, "--ldconfig", "cache")) {
                agent.awaitLog("first reconcile: 2 running", Duration.ofSeconds(30));
                containers.awaitWorking(before);
                String after = containers.startWithoutMounts("--runtime", "gpu", "--env", "NVIDIA_VISIBLE_DEVICES=0");
                containers.awaitWorking(after);
                assertThat(agent.logLines("repaired container " + after.substring(0, 12))).singleElement()
                        .asString().contains(": 9 link(s)");
                assertThat(agent.logLines("repaired container " + noGpu.substring(0, 12))).isEmpty();
                assertThat(agent.logLines("WARN")).isEmpty();
                assertThat(agent.logLines("ERROR")).isEmpty();
            }
        }
    }
}
