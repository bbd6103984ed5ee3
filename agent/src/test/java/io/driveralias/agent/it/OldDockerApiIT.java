package io.driveralias.agent.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import java.time.Duration;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Docker API 1.24 (Docker 1.12, the oldest the agent speaks), forced with
 * {@code --docker-api-version}: the live scenario through the old API's events (the startup
 * reconcile and a new container), inspect and exec (the ldconfig refresh). The daemon here is
 * new; asked in 1.24, it answers in 1.24's shapes.
 */
@Timeout(300)
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
                assertThat(agent.logLines("WARN")).isEmpty();
                assertThat(agent.logLines("ERROR")).isEmpty();
                assertThat(agent.stop()).isZero();
            }
        }
    }
}
