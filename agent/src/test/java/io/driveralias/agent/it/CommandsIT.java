package io.driveralias.agent.it;

import static io.driveralias.agent.testing.TestImages.DEBIAN_LIB;
import static io.driveralias.agent.testing.TestImages.VERSION;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.Processes;
import io.driveralias.agent.testing.SharedEngines;
import io.driveralias.agent.testing.TestImages;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.ResourceLock;

/** {@code check} and {@code repair [ID...]}: one-shot passes, their output and exit codes. */
@Timeout(300)
@ResourceLock(SharedEngines.DOCKER)
class CommandsIT {

    static DockerHarness docker;
    static GpuContainers containers;
    static String image;

    @BeforeAll
    static void setUp() {
        docker = DockerHarness.get();
        containers = new GpuContainers(docker);
        image = TestImages.image(docker, "debian-layout", DEBIAN_LIB, root -> { });
    }

    @AfterAll
    static void tearDown() {
        containers.close();
    }

    static Processes.Result agent(String... args) {
        List<String> cmd = new ArrayList<>(List.of(AgentProcess.java(), "-jar", AgentProcess.jar().toString()));
        cmd.addAll(List.of(args));
        if (args.length > 0 && List.of("check", "repair").contains(args[0])) {
            cmd.addAll(TestImages.hostLibraryArguments());
        }
        return Processes.run(cmd);
    }

    /**
     * The command's stdout: the log goes to stderr, which Processes merges (its lines hold '[' too,
     * "[main]"); the JSON starts with the first line that begins with '['.
     */
    static JsonNode json(Processes.Result r) throws Exception {
        java.util.regex.Matcher start = java.util.regex.Pattern.compile("(?m)^\\[").matcher(r.output());
        assertThat(start.find()).as("a JSON array on its own line in: " + r.output()).isTrue();
        return new ObjectMapper().readTree(r.output().substring(start.start()));
    }

    @Test
    void checkReportsRepairFixesAndCheckThenPasses() throws Exception {
        String gpu = containers.start(image, DEBIAN_LIB);
        String plain = containers.run(image, null, List.of("sleep", "600"));
        // As the kubelet's Docker shim names and labels a pod's sandbox (labels count only there).
        String uid = java.util.UUID.randomUUID().toString();
        String sandbox = containers.run(image, DEBIAN_LIB, List.of("sleep", "600"),
                "--name", "k8s_POD_check-pod_default_" + uid + "_0",
                "--label", "io.kubernetes.docker.type=podsandbox",
                "--label", "io.kubernetes.pod.name=check-pod",
                "--label", "io.kubernetes.pod.namespace=default",
                "--label", "io.kubernetes.pod.uid=" + uid);

        Processes.Result check = agent("check", gpu, plain, sandbox, "--docker-host", docker.host(), "--json");
        assertThat(check.exitCode()).as(check.output()).isEqualTo(1);
        JsonNode report = json(check);
        assertThat(report.get(0).get("outcome").asText()).isEqualTo("failed");
        assertThat(report.get(0).get("links").findValuesAsText("status")).containsOnly("planned");
        assertThat(report.get(1).get("outcome").asText()).isEqualTo("no_driver");
        assertThat(report.get(2).get("outcome").asText()).isEqualTo("excluded");
        assertThat(report.get(2).get("inScope").asBoolean()).isFalse();

        Processes.Result dryRun = agent("repair", gpu, "--dry-run", "--docker-host", docker.host());
        assertThat(dryRun.exitCode()).isEqualTo(1);
        assertThat(dryRun.output()).contains("would create  /usr/lib/x86_64-linux-gnu/libcuda.so.1 -> libcuda.so." + VERSION);
        assertThat(containers.exec(gpu, "nvidia-smi").exitCode()).isNotZero();

        Processes.Result repair = agent("repair", gpu, "--docker-host", docker.host());
        assertThat(repair.exitCode()).as(repair.output()).isZero();
        assertThat(repair.output()).contains("created       /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1")
                .contains("ld.so.cache   /etc/ld.so.cache: aliases added");
        assertThat(containers.exec(gpu, "sh", "-c", "ldconfig -p | grep -q 'libcuda.so.1 '").exitCode()).isZero();
        assertThat(containers.exec(gpu, "nvidia-smi").exitCode()).isZero();

        Processes.Result again = agent("check", "--docker-host", docker.host());
        assertThat(again.exitCode()).as(again.output()).isZero();
        assertThat(again.output()).contains(gpu.substring(0, 12)).contains("healthy");
    }

    @Test
    void unreachableDockerExitsThree() {
        Processes.Result r = agent("check", "--docker-host", "unix:///nonexistent/docker.sock");

        assertThat(r.exitCode()).isEqualTo(3);
        assertThat(r.output()).contains("cannot reach Docker");
    }

    @Test
    void badConfigurationExitsTwo() {
        assertThat(agent("run", "--resync-interval", "soon").exitCode()).isEqualTo(2);
        assertThat(agent("frobnicate").exitCode()).isEqualTo(2);
        assertThat(agent("check", "--no-such-option").output()).contains("unknown option --no-such-option");
    }
}
