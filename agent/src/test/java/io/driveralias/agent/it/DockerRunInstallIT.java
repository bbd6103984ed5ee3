package io.driveralias.agent.it;

import static io.driveralias.agent.testing.TestImages.DEBIAN_LIB;
import static io.driveralias.agent.testing.TestImages.VERSION;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.driveralias.agent.metrics.RepoFiles;
import io.driveralias.agent.testing.AgentImage;
import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.DockerRunLine;
import io.driveralias.agent.testing.Processes;
import io.driveralias.agent.testing.SharedEngines;
import io.driveralias.agent.testing.TestImages;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * The {@code docker run} line of docs/install-without-kubernetes.md, read from that file and run
 * against the test dockerd with the agent's registry-less image ({@link AgentImage}), repairs a
 * GPU container started after it; the page's {@code check} line, run the same way, then reports
 * that container healthy. DockerRunInstallTest shows the line's privileges are the DaemonSet's.
 *
 * <p>What the test changes in the lines, and why: the image (the test's tag); the node's /run
 * (the harness dockerd's directory, which holds its socket as docker.sock) and Docker's data root
 * (the harness' own, at the paths the lines name on a host); the container's name
 * (unique); {@code --publish 9470:9470} becomes {@code --network host} with the agent listening
 * on a free loopback port, because the harness dockerd has no bridge network to publish from.
 */
@Timeout(600)
@ResourceLock(SharedEngines.DOCKER)
class DockerRunInstallIT {

    private static final String DOC = "docs/install-without-kubernetes.md";
    private static final String ALIAS = DEBIAN_LIB + "/libcuda.so.1";
    private static final String TARGET = "libcuda.so." + VERSION;

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    @Test
    void theDocumentedLineRepairsAContainerStartedAfterIt() throws Exception {
        DockerHarness docker = DockerHarness.get();
        assumeTrue(docker.host().startsWith("unix://"), "the agent container needs the engine's socket");
        String image = AgentImage.get(docker);
        String gpuImage = TestImages.image(docker, "debian-layout", DEBIAN_LIB, root -> { });
        String socket = docker.host().substring("unix://".length());
        String dataRoot = docker.run("info", "--format", "{{.DockerRootDir}}");
        int port = AgentProcess.freePort();
        String name = "daa-docker-run-install-" + UUID.randomUUID().toString().substring(0, 8);

        DockerRunLine line = DockerRunLine.fromMarkdown(RepoFiles.read(DOC), "docker-run-install");
        List<String> args = adapt(line, image, socket, dataRoot, name, port);
        String agentId = docker.run(args.toArray(String[]::new));
        try (GpuContainers containers = new GpuContainers(docker)) {
            awaitReady(docker, agentId, port);

            String id = containers.start(gpuImage, DEBIAN_LIB);
            containers.awaitLink(id, ALIAS, TARGET);
            AgentProcess.awaitTrue("the agent's line about " + id.substring(0, 12), Duration.ofSeconds(30),
                    () -> log(docker, agentId).contains("repaired container " + id.substring(0, 12)));

            DockerRunLine check = checkLine();
            assertThat(check.arguments()).containsExactly("check");
            List<String> checkArgs = adapt(check, image, socket, dataRoot, null, 0);
            checkArgs.add(id);
            Processes.Result result = Processes.run(docker.docker(checkArgs.toArray(String[]::new)), 120);
            assertThat(result.exitCode()).as("check %s:\n%s", id, result.output()).isZero();
            assertThat(result.output()).contains(id.substring(0, 12)).contains("libcuda.so.1");
        } catch (AssertionError | RuntimeException e) {
            throw new AssertionError(e.getMessage() + "\n--- the agent's log ---\n" + log(docker, agentId), e);
        } finally {
            docker.tryRun("rm", "-f", agentId);
        }
    }

    /** The page's {@code docker run ... check} line (in "Verify"). */
    private static DockerRunLine checkLine() {
        Matcher m = Pattern.compile("(?m)^docker run --rm .* check$").matcher(RepoFiles.read(DOC));
        assertThat(m.find()).as("a docker run ... check line in " + DOC).isTrue();
        return DockerRunLine.parse(m.group());
    }

    /** The line's words for the harness (see the class comment), without the leading {@code docker}. */
    private static List<String> adapt(DockerRunLine line, String image, String socket, String dataRoot, String name,
                                      int port) {
        List<String> args = new ArrayList<>(List.of("run"));
        for (List<String> option : line.options()) {
            String flag = option.getFirst();
            String value = option.size() > 1 ? option.get(1) : null;
            switch (flag) {
                case "--name" -> args.addAll(List.of(flag, name));
                case "--publish" -> args.addAll(List.of("--network", "host", "--env",
                        "DRIVER_ALIAS_LISTEN=127.0.0.1:" + port));
                // The host side only: the agent finds the socket where the line mounts it.
                case "--mount" -> args.addAll(List.of(flag, value
                        .replace("source=/run,", "source=" + socket.substring(0, socket.lastIndexOf('/')) + ",")
                        // The node's /var/lib, which holds Docker's data root: the engine's, at its own path.
                        .replace("source=/var/lib,target=/var/lib,", "source=" + dataRoot + ",target=" + dataRoot + ",")
                        .replace("/var/lib/docker/", dataRoot + "/")));
                case "-v" -> args.addAll(List.of(flag, value.replaceFirst("^/var/run/docker\\.sock:", socket + ":")));
                default -> args.addAll(option);
            }
        }
        // The test drivers' host directories, at their own paths (/proc/1/root is refused here).
        for (String dir : TestImages.hostLibraryDirectories()) {
            args.addAll(List.of("--mount", "type=bind,source=" + dir + ",target=" + dir + ",readonly"));
        }
        args.addAll(List.of("--env", "DRIVER_ALIAS_HOST_LIB_DIR=" + String.join(",", TestImages.hostLibraryDirectories())));
        args.add("--label");
        args.add("daa-test=docker-run-install");
        args.add(image);
        args.addAll(line.arguments());
        return args;
    }

    private void awaitReady(DockerHarness docker, String agentId, int port) {
        AgentProcess.awaitTrue("/readyz of the agent started by the documented line", Duration.ofSeconds(60), () -> {
            if (!"true".equals(docker.run("inspect", "-f", "{{.State.Running}}", agentId))) {
                throw new AssertionError("the agent container exited: " + log(docker, agentId));
            }
            try {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
                        + "/readyz")).timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString());
                return r.statusCode() == 200;
            } catch (IOException e) {
                return false;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        });
    }

    private static String log(DockerHarness docker, String id) {
        return Processes.run(docker.docker("logs", id)).output();
    }
}
