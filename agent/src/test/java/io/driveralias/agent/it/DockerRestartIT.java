package io.driveralias.agent.it;

import static io.driveralias.agent.testing.TestImages.DEBIAN_LIB;
import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.SharedEngines;
import io.driveralias.agent.testing.TestImages;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * dockerd restarted under the running agent. The agent reaches Docker through a symlink to
 * the socket that the test removes while dockerd is down and keeps removed after dockerd is
 * back, so containers are started while the agent is certainly disconnected; then it is put
 * back and the agent must catch up (event replay since its last event, and the reconcile).
 */
@Timeout(300)
@ResourceLock(SharedEngines.DOCKER)
class DockerRestartIT {

    @Test
    void containersStartedDuringAndAfterADockerRestartAreAllRepaired() throws IOException {
        DockerHarness docker = DockerHarness.get();
        Assumptions.assumeTrue(docker.isPrivate(),
                "restarting dockerd needs the private engine; DOCKER_HOST points at a shared one");
        String image = TestImages.image(docker, "debian-layout", DEBIAN_LIB, root -> { });
        Path link = Files.createTempDirectory("daa-socket-").resolve("docker.sock");
        Path socket = Path.of(docker.host().substring("unix://".length()));
        Files.createSymbolicLink(link, socket);
        try (GpuContainers containers = new GpuContainers(docker);
             AgentProcess agent = AgentProcess.start(docker, "--ldconfig", "off", "--docker-host", "unix://" + link)) {
            agent.awaitLog("first reconcile", Duration.ofSeconds(30));
            String before = containers.start(image, DEBIAN_LIB);
            containers.awaitNvidiaSmi(before);

            docker.stopDaemon();
            Files.delete(link);
            agent.awaitLog("Docker event stream .* lost", Duration.ofSeconds(20));
            docker.startDaemon();
            List<String> during = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                during.add(containers.start(image, DEBIAN_LIB));
            }
            assertThat(agent.logLines("watching Docker events")).as("still disconnected").hasSize(1);
            Files.createSymbolicLink(link, socket);
            agent.await("a second connection", Duration.ofSeconds(60),
                    () -> agent.logLines("watching Docker events").size() >= 2);
            List<String> after = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                after.add(containers.start(image, DEBIAN_LIB));
            }

            for (String id : during) {
                containers.awaitNvidiaSmi(id);
            }
            for (String id : after) {
                containers.awaitNvidiaSmi(id);
            }
            for (String id : during) {
                assertThat(agent.logLines("repaired container " + id.substring(0, 12))).hasSize(1);
            }
            assertThat(agent.isAlive()).isTrue();
            assertThat(agent.logLines("ERROR")).isEmpty();
        }
    }
}
