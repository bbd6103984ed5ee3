package io.driveralias.agent.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.AgentCommand;
import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A storage driver without overlay paths: a second private dockerd with
 * {@code --storage-driver vfs}, whose inspect has no MergedDir/UpperDir/LowerDir, as on
 * devicemapper, btrfs and zfs hosts. The agent repairs through {@code /proc/<pid>/root} and
 * says at DEBUG why the before-start path does not apply.
 */
@Timeout(300)
class VfsStorageIT {

    static DockerHarness docker;

    @BeforeAll
    static void daemon() {
        docker = DockerHarness.startAnother("--storage-driver", "vfs");
        assertThat(docker.run("info", "--format", "{{.Driver}}")).isEqualTo("vfs");
    }

    @AfterAll
    static void stop() {
        if (docker != null) {
            docker.close();
        }
    }

    @Test
    void repairedThroughProcRootAndTheBeforeStartPathSaysWhyItIsSkipped() {
        try (RealContainers containers = new RealContainers(docker)) {
            String running = containers.start();
            containers.assertBroken(running);
            assertThat(docker.run("inspect", "-f", "{{.GraphDriver.Name}} {{json .GraphDriver.Data}}", running))
                    .isEqualTo("vfs null");
            try (AgentProcess agent = AgentCommand.startWithDebug(docker,
                    List.of("io.driveralias.agent.overlay", "io.driveralias.agent.live"))) {
                agent.awaitLog("first reconcile: 1 running", Duration.ofSeconds(30));
                containers.awaitWorking(running);

                String created = containers.create();
                agent.awaitLog("container " + created + ": not repaired before start: storage driver vfs has no "
                        + "overlay layers; the start path repairs it through /proc/<pid>/root", Duration.ofSeconds(20));
                docker.run("start", created);
                containers.awaitWorking(created);
                assertThat(agent.logLines("repaired container " + created.substring(0, 12))).hasSize(1);
                assertThat(agent.logLines("WARN")).isEmpty();
                assertThat(agent.logLines("ERROR")).isEmpty();
            }
        }
    }
}
