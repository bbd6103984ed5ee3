package io.driveralias.agent.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.SharedEngines;
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
 * Containers made the way the kubelet's dockershim makes them: a pause sandbox
 * ({@code io.kubernetes.docker.type=podsandbox}) and app containers joining its network and
 * IPC namespaces (one also its PID namespace, as with {@code shareProcessNamespace}), all under
 * the pod's cgroup parent {@code /kubepods/burstable/pod<uid>}, named {@code k8s_...} and
 * labelled {@code io.kubernetes.*}. The app containers are repaired and attributed to the pod
 * (the log line's pod, the metrics' namespace/pod/container labels); the sandbox is left alone
 * even though it has the driver files too.
 */
@Timeout(300)
@ResourceLock(SharedEngines.DOCKER)
class KubeletContainersIT {

    static final String NAMESPACE = "ml-team";
    static final String POD = "trainer-7f9c";
    static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    final DockerHarness docker = DockerHarness.get();

    @Test
    void appContainersAreRepairedAndAttributedToThePodTheSandboxIsSkipped() {
        String uid = UUID.randomUUID().toString();
        try (RealContainers containers = new RealContainers(docker);
             AgentProcess agent = AgentProcess.start(docker, "--ldconfig", "off", "--kubernetes", "off")) {
            agent.awaitLog("first reconcile", Duration.ofSeconds(30));
            double excludedBefore = metric(agent, "driver_alias_containers_total\\{outcome=\"excluded\"\\}");

            // The sandbox gets the driver files too: repairing it by mistake would show.
            String sandbox = containers.start(kubelet(uid, "POD", "podsandbox", null,
                    "--ipc", "shareable", "--network", "none"));
            String app = containers.start(kubelet(uid, "cuda", "container", sandbox));
            String sharedPid = containers.start(kubelet(uid, "sidecar", "container", sandbox,
                    "--pid", "container:" + sandbox));
            String readOnly = containers.start(kubelet(uid, "readonly", "container", sandbox, "--read-only"));

            assertThat(docker.run("inspect", "-f", "{{.HostConfig.CgroupParent}} {{.HostConfig.NetworkMode}}", app))
                    .isEqualTo("/kubepods/burstable/pod" + uid + " container:" + sandbox);
            for (String id : List.of(app, sharedPid)) {
                containers.awaitWorking(id);
                agent.awaitLog("repaired container " + id.substring(0, 12), Duration.ofSeconds(20));
                assertThat(agent.logLines("repaired container " + id.substring(0, 12))).singleElement().asString()
                        .contains(" pod=" + NAMESPACE + "/" + POD + " ");
            }
            agent.awaitLog("container " + readOnly.substring(0, 12) + " .* is not repaired: .*read_only",
                    Duration.ofSeconds(20));
            AgentProcess.awaitTrue("the sandbox counted as excluded", Duration.ofSeconds(20),
                    () -> metric(agent, "driver_alias_containers_total\\{outcome=\"excluded\"\\}") >= excludedBefore + 1);
            assertThat(scrape(agent)).contains("driver_alias_container_unrepaired{container=\"readonly\",container_id=\""
                    + readOnly + "\",namespace=\"" + NAMESPACE + "\",pod=\"" + POD + "\",reason=\"read_only\"} 1");

            assertThat(agent.logLines(sandbox.substring(0, 12))).as("nothing done to the sandbox").isEmpty();
            assertThat(containers.exec(sandbox, "ls", RealContainers.LIB_DIR + "/libcuda.so.1").exitCode())
                    .as("no alias in the sandbox").isNotZero();
        }
    }

    /** dockershim's options for a pod's container; {@code sandbox} null for the sandbox itself. */
    private static String[] kubelet(String uid, String container, String type, String sandbox, String... more) {
        List<String> args = new ArrayList<>(List.of(
                "--name", "k8s_" + container + "_" + POD + "_" + NAMESPACE + "_" + uid + "_0",
                "--cgroup-parent", "/kubepods/burstable/pod" + uid,
                "--label", "io.kubernetes.docker.type=" + type,
                "--label", "io.kubernetes.pod.namespace=" + NAMESPACE,
                "--label", "io.kubernetes.pod.name=" + POD,
                "--label", "io.kubernetes.pod.uid=" + uid,
                "--label", "io.kubernetes.container.name=" + container,
                "--label", "annotation.io.kubernetes.container.restartCount=0"));
        if (sandbox != null) {
            args.addAll(List.of("--label", "io.kubernetes.sandbox.id=" + sandbox,
                    "--network", "container:" + sandbox, "--ipc", "container:" + sandbox));
        }
        args.addAll(List.of(more));
        return args.toArray(String[]::new);
    }

    private static String scrape(AgentProcess agent) {
        try {
            return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + agent.port() + "/metrics"))
                    .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString()).body();
        } catch (IOException e) {
            throw new AssertionError("cannot scrape the agent: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    private static double metric(AgentProcess agent, String series) {
        Matcher m = Pattern.compile("(?m)^" + series + " ([0-9.eE+-]+)$").matcher(scrape(agent));
        return m.find() ? Double.parseDouble(m.group(1)) : 0;
    }
}
