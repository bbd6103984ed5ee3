package io.driveralias.agent.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.SharedEngines;
import java.time.Duration;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * Docker API 1.24 (Docker 1.12, the oldest the agent speaks), forced with
 * {@code --docker-api-version}: the live scenario through the old API's events (the startup
 * reconcile, a new container, a created one repaired before its start), inspect and exec (the
 * ldconfig refresh). The daemon here is
 * new; asked in 1.24, it answers in 1.24's shapes.
 */
@Timeout(300)
@ResourceLock(SharedEngines.DOCKER)
class OldDockerApiIT {

    final DockerHarness docker = DockerHarness.get();

    @Test
    void theLiveScenarioOverApi124() {
        try (RealContainers containers = new RealContainers(docker)) {
            String before = containers.start();
            try (AgentProcess agent = AgentProcess.start(docker, "--docker-api-version", "1.24", "--ldconfig", "cache")) {
                agent.awaitLog("watching Docker events at .* \\(API 1\\.24\\)", Duration.ofSeconds(30));
                agent.awaitLog("first reconcile: 1 running container", Duration.ofSeconds(30));
                containers.awaitWorking(before);
                String after = containers.start();
                containers.awaitWorking(after);
                // exec over 1.24: the ldconfig refresh ran in the container.
                AgentProcess.awaitTrue("ldconfig -p to list libcuda.so.1", Duration.ofSeconds(20),
                        () -> Pattern.compile("\\slibcuda\\.so\\.1 \\(").matcher(
                                containers.exec(after, "ldconfig", "-p").output()).find());
                // inspect over 1.24 still names the overlay layers: the before-start path works.
                String created = containers.create();
                AgentProcess.awaitTrue("libcuda.so.1 in the writable layer of " + created, Duration.ofSeconds(20),
                        () -> java.nio.file.Files.isSymbolicLink(java.nio.file.Path.of(docker.run("inspect", "-f",
                                "{{.GraphDriver.Data.UpperDir}}", created), RealContainers.LIB_DIR.substring(1),
                                "libcuda.so.1")));
                docker.run("start", created);
                agent.awaitLog("repaired container " + created.substring(0, 12) + " \\([^)]*\\) before start",
                        Duration.ofSeconds(20));
                containers.awaitWorking(created);
                assertThat(agent.logLines("WARN")).isEmpty();
                assertThat(agent.logLines("ERROR")).isEmpty();
                assertThat(agent.stop()).isZero();
            }
        }
    }
}
