package io.driveralias.agent.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.AgentCommand;
import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.PodmanHarness;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Podman 4.3 (Debian's) through its Docker-compatible socket, as docs/platforms.md describes
 * it: the agent speaks Docker's API to {@code podman system service}, sees its events, and
 * repairs GPU containers (the real driver files bind-mounted) once they run, through
 * {@code /proc/<pid>/root}, whether they were running before it, started by {@code docker run},
 * or created and started later. Not before their first instruction: Podman's storage driver is
 * {@code overlay} (containers/storage), not Docker's {@code overlay2}, so the path that writes
 * before the start does not apply, and the agent says why. A container without a GPU request
 * is left alone.
 */
@Timeout(300)
class PodmanIT {

    static PodmanHarness podman;

    @BeforeAll
    static void service() {
        podman = PodmanHarness.start();
    }

    @AfterAll
    static void stop() {
        if (podman != null) {
            podman.close();
        }
    }

    @Test
    void gpuContainersAreRepairedOnceStartedAndTheBeforeStartPathSaysWhyNot() {
        DockerHarness docker = podman.docker();
        try (RealContainers containers = new RealContainers(docker)) {
            // No network: the test needs none, and Podman's bridge would write the host's netavark state.
            String before = containers.start("--network", "none");
            containers.assertBroken(before);
            assertThat(docker.run("inspect", "-f", "{{.GraphDriver.Name}}", before)).isEqualTo("overlay");
            try (AgentProcess agent = AgentCommand.startShippedWithDebug(docker,
                    List.of("io.driveralias.agent.overlay", "io.driveralias.agent.live"), "--runtime", "docker",
                    "--kubernetes", "off")) {
                agent.awaitLog("watching Docker events at " + docker.host() + " \\(API 1\\.41\\)", Duration.ofSeconds(90));
                agent.awaitLog("first reconcile: 1 running", Duration.ofSeconds(30));
                containers.awaitWorking(before);

                String run = containers.start("--network", "none");
                containers.awaitWorking(run);

                String created = containers.create("--network", "none");
                agent.awaitLog("container " + created + ": not repaired before start: storage driver overlay has no overlay "
                        + "layers; the start path repairs it through /proc/<pid>/root", Duration.ofSeconds(30));
                docker.run("start", created);
                containers.awaitWorking(created);

                String plain = docker.run("run", "-d", "--network", "none", containers.image(), "sleep", "600");
                containers.adopt(plain);
                agent.awaitLog("container " + plain.substring(0, 12) + " \\(.*\\): no_driver no GPU request", Duration.ofSeconds(30));

                for (String id : List.of(before, run, created)) {
                    assertThat(agent.logLines("repaired container " + id.substring(0, 12))).hasSize(1);
                }
                assertThat(agent.metric("driver_alias_containers_total{outcome=\"repaired\"}")).isEqualTo(3);
                // All three, whether the agent saw their create or not: Podman's storage has no layers to
                // write into before a start (not a create the agent missed).
                assertThat(agent.metric("driver_alias_repaired_after_start_total{cause=\"no_overlay\"}")).isEqualTo(3);
                assertThat(agent.metric("driver_alias_repaired_after_start_total{cause=\"missed_create\"}")).isZero();
                assertThat(agent.metric("driver_alias_runtime_up{runtime=\"docker\"}")).isEqualTo(1);
                assertThat(agent.logLines("WARN")).isEmpty();
                assertThat(agent.logLines("ERROR")).isEmpty();

                assertThat(docker.run("exec", plain, "ls", RealContainers.LIB_DIR)).doesNotContain("libcuda");
            }
        }
    }
}
