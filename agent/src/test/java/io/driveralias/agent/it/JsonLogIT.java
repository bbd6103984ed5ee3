package io.driveralias.agent.it;

import static io.driveralias.agent.testing.TestImages.DEBIAN_LIB;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.driveralias.agent.metrics.RepoFiles;
import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.SharedEngines;
import io.driveralias.agent.testing.TestImages;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * The packaged agent as the DaemonSet runs it (its JVM options from agent/image/jvm.options, the
 * JSON log format) writes nothing but JSON: every line of its output, stdout and stderr, from the
 * JVM's first word to its exit, is one object with the keys log pipelines read, and a line about
 * a container names it in keys of its own, whatever the container's labels hold.
 */
@Timeout(180)
@ResourceLock(SharedEngines.DOCKER)
class JsonLogIT {

    private static final ObjectMapper JSON = new ObjectMapper();

    static DockerHarness docker;
    static String image;
    GpuContainers containers;

    @BeforeAll
    static void images() {
        docker = DockerHarness.get();
        image = TestImages.image(docker, "debian-layout", DEBIAN_LIB, root -> { });
    }

    @BeforeEach
    void containers() {
        containers = new GpuContainers(docker);
    }

    @AfterEach
    void removeContainers() {
        containers.close();
    }

    @Test
    void everyLineFromStartToExitIsAnEcsObject() {
        int port = AgentProcess.freePort();
        List<String> cmd = new java.util.ArrayList<>(List.of(AgentProcess.java(), "@" + RepoFiles.path("agent/image/jvm.options"),
                "-jar", AgentProcess.jar().toString(), "run", "--log-format", "json", "--docker-host", docker.host(),
                "--listen", "127.0.0.1:" + port, "--resync-interval", "5s", "--kubernetes", "off"));
        cmd.addAll(TestImages.hostLibraryArguments());
        String hostilePod = "train-0\"}\n{\"log.level\":\"ERROR\",\"message\":\"forged\"}";
        String id;
        String hostile;
        String output;
        try (AgentProcess agent = AgentProcess.start(cmd, port)) {
            agent.awaitLog("first reconcile", Duration.ofSeconds(60));
            // As the kubelet's Docker shim names and labels a pod's container: attributed.
            id = containers.start(image, DEBIAN_LIB,
                    "--name", "k8s_trainer_train-0_ml_0b5c3a1e-uid_" + System.nanoTime(),
                    "--label", "io.kubernetes.pod.namespace=ml",
                    "--label", "io.kubernetes.pod.name=train-0",
                    "--label", "io.kubernetes.pod.uid=0b5c3a1e-uid",
                    "--label", "io.kubernetes.container.name=trainer",
                    "--label", "io.kubernetes.docker.type=container");
            // The same labels with a hostile pod name on a container the kubelet did not name.
            hostile = containers.start(image, DEBIAN_LIB,
                    "--label", "io.kubernetes.pod.namespace=ml",
                    "--label", "io.kubernetes.pod.name=" + hostilePod,
                    "--label", "io.kubernetes.pod.uid=0b5c3a1e-uid",
                    "--label", "io.kubernetes.container.name=trainer",
                    "--label", "io.kubernetes.docker.type=container");
            agent.awaitLog("repaired container " + id.substring(0, 12), Duration.ofSeconds(30));
            agent.awaitLog("repaired container " + hostile.substring(0, 12), Duration.ofSeconds(30));
            assertThat(agent.stop()).isZero();
            output = agent.log();
        }

        List<JsonNode> lines = parse(output);
        for (JsonNode line : lines) {
            assertThat(Instant.parse(line.path("@timestamp").asText())).as(line.toString()).isNotNull();
            assertThat(line.path("log.level").asText()).as(line.toString()).isIn("ERROR", "WARN", "INFO");
            assertThat(line.path("message").asText()).as(line.toString()).isNotEmpty();
            assertThat(line.path("log.logger").asText()).as(line.toString()).startsWith("io.driveralias.agent");
            assertThat(line.path("service.name").asText()).isEqualTo("driver-alias-agent");
        }
        assertThat(lines).extracting(l -> l.path("message").asText())
                .anyMatch(m -> m.startsWith("driver-alias-agent started"))
                .anyMatch(m -> m.startsWith("stopping"))
                .noneMatch(m -> m.equals("forged"));
        JsonNode repaired = lines.stream().filter(l -> l.path("message").asText().startsWith("repaired container")
                && l.path("container_id").asText().equals(id)).findFirst().orElseThrow();
        assertThat(repaired.path("container_id").asText()).isEqualTo(id);
        assertThat(repaired.path("pod").asText()).isEqualTo("ml/train-0");
        JsonNode unattributed = lines.stream().filter(l -> l.path("message").asText().startsWith("repaired container")
                && l.path("container_id").asText().equals(hostile)).findFirst().orElseThrow();
        assertThat(unattributed.path("pod").asText()).isEmpty();
        assertThat(output).doesNotContain("forged");
        assertThat(lines).noneMatch(l -> l.path("log.level").asText().equals("ERROR"));
    }

    /** Each line of the output as a JSON object; anything else fails with the line. */
    private static List<JsonNode> parse(String output) {
        List<JsonNode> lines = new ArrayList<>();
        for (String line : output.split("\n", -1)) {
            if (line.isEmpty()) {
                continue;
            }
            try {
                JsonNode node = JSON.readTree(line);
                assertThat(node.isObject()).as("not a JSON object: %s", line).isTrue();
                lines.add(node);
            } catch (IOException e) {
                throw new AssertionError("not JSON: " + line + "\nthe whole output:\n" + output, e);
            }
        }
        assertThat(lines).as(output).hasSizeGreaterThanOrEqualTo(4);
        return lines;
    }

}
