package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.config.AgentConfig;
import io.driveralias.agent.config.ConfigParser;
import io.driveralias.agent.metrics.RepoFiles;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The runbook's {@code kubectl debug node/...} line for a containerd node, run by the real kubectl
 * against an API server stand-in (fabric8's mock server in CRUD mode, which holds the node, with
 * the discovery documents kubectl asks for first, and which keeps the pod kubectl sends in its
 * protobuf encoding): the pod kubectl creates shares the node's PID namespace, sees the node's
 * root at {@code /host}, runs the agent's image with the agent's own java, and the agent accepts the
 * command it is given, whose containerd socket is the node's, seen through {@code /host}. No kubelet
 * runs the pod here: {@code ContainerdImageIT} runs the same check from the same image on containerd.
 */
class KubectlDebugLineTest {

    private static final Pattern BLOCK = Pattern.compile("<!-- kubectl debug line -->\\s*\\n```sh\\n(.*?)\\n```",
            Pattern.DOTALL);
    private static final String NODE = "gpu-1";
    private static final String IMAGE = "registry.example.com/gpu/driver-alias-agent:0.2.0";
    private static final String CONTAINER_ID = "3f2a9c1b7d4e";

    private KubernetesMockServer server;
    private KubernetesClient client;

    /** Answers kubectl's discovery (the core group, no other) and hands the rest to the CRUD store. */
    /** The pods kubectl created, as it sent them. */
    private static final List<byte[]> CREATED = java.util.Collections.synchronizedList(new ArrayList<>());

    private static final class WithDiscovery extends KubernetesCrudDispatcher {
        @Override
        public MockResponse dispatch(RecordedRequest request) {
            String path = request.getPath().replaceFirst("\\?.*", "");
            String type = request.getHeader("Content-Type");
            if ("POST".equals(request.getMethod()) && path.endsWith("/pods") && type != null && type.contains("protobuf")) {
                // kubectl writes objects in Kubernetes' protobuf encoding, which the CRUD store does
                // not read: keep the body for the test, and answer with the object, as the API server does.
                byte[] pod = request.getBody().readByteArray();
                CREATED.add(pod);
                return new MockResponse().setResponseCode(201).setHeader("Content-Type", type).setBody(pod);
            }
            String body = switch (path) {
                case "/api" -> "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"],\"serverAddressByClientCIDRs\":"
                        + "[{\"clientCIDR\":\"0.0.0.0/0\",\"serverAddress\":\"127.0.0.1\"}]}";
                case "/apis" -> "{\"kind\":\"APIGroupList\",\"apiVersion\":\"v1\",\"groups\":[]}";
                case "/api/v1" -> "{\"kind\":\"APIResourceList\",\"groupVersion\":\"v1\",\"resources\":["
                        + resource("nodes", "Node", false) + "," + resource("pods", "Pod", true) + "]}";
                case "/version" -> "{\"major\":\"1\",\"minor\":\"32\",\"gitVersion\":\"v1.32.0\"}";
                default -> null;
            };
            if (body == null) {
                return super.dispatch(request);
            }
            return new MockResponse().setResponseCode(200).setHeader("Content-Type", "application/json").setBody(body);
        }

        private static String resource(String name, String kind, boolean namespaced) {
            return "{\"name\":\"" + name + "\",\"singularName\":\"\",\"namespaced\":" + namespaced + ",\"kind\":\"" + kind
                    + "\",\"verbs\":[\"create\",\"delete\",\"get\",\"list\",\"patch\",\"update\",\"watch\"]}";
        }
    }

    @BeforeEach
    void startServer() {
        server = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(), new WithDiscovery(), false);
        server.init();
        Config config = new ConfigBuilder(Config.empty()).withAutoConfigure(false).withMasterUrl(server.url("/"))
                .withNamespace("default").build();
        client = new KubernetesClientBuilder().withConfig(config).build();
        client.nodes().resource(new NodeBuilder().withNewMetadata().withName(NODE).endMetadata().build()).create();
    }

    @AfterEach
    void stopServer() {
        client.close();
        server.destroy();
    }

    /** The runbook's line, and the README's the same. */
    static String documentedLine() {
        Matcher runbook = BLOCK.matcher(RepoFiles.read("docs/runbook.md"));
        assertThat(runbook.find()).as("docs/runbook.md has a <!-- kubectl debug line --> block").isTrue();
        Matcher readme = BLOCK.matcher(RepoFiles.read("README.md"));
        assertThat(readme.find()).as("README.md has a <!-- kubectl debug line --> block").isTrue();
        assertThat(readme.group(1).lines().findFirst()).as("README's line").contains(runbook.group(1).lines().findFirst().orElseThrow());
        return runbook.group(1).lines().findFirst().orElseThrow();
    }

    @Test
    void theDebugPodKubectlMakesRunsTheAgentsCheckOnTheNodesContainerd(@TempDir Path tmp) throws Exception {
        String line = documentedLine().replace("<node>", NODE).replace("<the agent's image>", IMAGE)
                .replace("<container-id>", CONTAINER_ID);
        List<String> words = new ArrayList<>(List.of(line.split(" +")));
        assertThat(words.subList(0, 3)).containsExactly("kubectl", "debug", "node/" + NODE);
        // Attaching needs a kubelet to stream from (and kubectl would wait for the pod to run): the
        // stand-in creates the pod, and that is what is checked.
        int interactive = words.indexOf("-it");
        assertThat(interactive).as("the line attaches to the pod (-it)").isPositive();
        words.set(interactive, "--attach=false");
        Path kubeconfig = tmp.resolve("kubeconfig");
        Files.writeString(kubeconfig, """
                apiVersion: v1
                kind: Config
                clusters: [{name: stand-in, cluster: {server: "%s"}}]
                users: [{name: someone, user: {token: t}}]
                contexts: [{name: stand-in, context: {cluster: stand-in, user: someone, namespace: default}}]
                current-context: stand-in
                """.formatted(server.url("/").replaceFirst("/$", "")));
        List<String> command = new ArrayList<>(List.of(Kustomize.executable(), "--kubeconfig", kubeconfig.toString()));
        command.addAll(words.subList(1, words.size()));
        Path log = tmp.resolve("kubectl.log");
        Process kubectl = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        kubectl.getOutputStream().close();
        boolean exited = kubectl.waitFor(60, TimeUnit.SECONDS);
        if (!exited) {
            kubectl.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        String output = Files.readString(log, StandardCharsets.UTF_8);
        assertThat(exited).as("kubectl debug within 60 s: %s", output).isTrue();
        assertThat(kubectl.exitValue()).as("kubectl debug: %s", output).isZero();

        assertThat(CREATED).as("pods created by kubectl debug (%s)", output).hasSize(1);
        PodSpecFields pod = PodSpecFields.of(CREATED.getFirst());
        assertThat(pod.nodeName()).isEqualTo(NODE);
        assertThat(pod.hostPid()).as("the node's PID namespace: /proc shows the containers' processes").isTrue();
        assertThat(pod.image()).isEqualTo(IMAGE);
        assertThat(pod.privileged()).as("--profile=sysadmin").isTrue();
        // The node's root at /host: the socket the command names is the node's containerd's.
        assertThat(pod.hostPathAt("/host")).hasValue("/");

        // The image's own java and options (the image has no shell and no java on its PATH), then the agent's command.
        List<String> run = new ArrayList<>(pod.command());
        run.addAll(pod.args());
        assertThat(run.subList(0, 4)).containsExactly("/opt/java/bin/java", "@/opt/driver-alias-agent/jvm.options", "-jar",
                "/opt/driver-alias-agent/driver-alias-agent.jar");
        AgentConfig config = ConfigParser.parse(run.subList(4, run.size()), Map.of());
        assertThat(config.command()).isEqualTo(AgentConfig.Command.CHECK);
        assertThat(config.containerIds()).containsExactly(CONTAINER_ID);
        String address = config.containerdAddress();
        assertThat(address).startsWith("unix:///host/");
        String onTheNode = address.substring("unix:///host".length());
        assertThat(onTheNode).as("the node's containerd socket, where the DaemonSet finds it under /run")
                .isEqualTo("/run/containerd/containerd.sock");
        String daemonSetAddress = DaemonSetValues.containerdAddress();
        assertThat("/run" + daemonSetAddress.substring("unix:///host/run".length())).isEqualTo(onTheNode);
    }

    /**
     * The fields of the pod kubectl sent that the test reads, from Kubernetes' protobuf encoding
     * (k8s.io/api core/v1 generated.proto: the envelope's raw object is field 2; Pod.spec 2;
     * PodSpec volumes 1, containers 2, nodeName 10, hostPID 12; Container image 2, command 3, args 4,
     * volumeMounts 9, securityContext 15; VolumeMount name 1, mountPath 3; Volume name 1, source 2;
     * VolumeSource hostPath 1; HostPathVolumeSource path 1; SecurityContext privileged 2).
     */
    private record PodSpecFields(com.google.protobuf.UnknownFieldSet spec) {

        static PodSpecFields of(byte[] body) throws Exception {
            assertThat(new String(body, 0, 4, StandardCharsets.ISO_8859_1)).isEqualTo("k8s\0");
            var envelope = com.google.protobuf.UnknownFieldSet.parseFrom(java.util.Arrays.copyOfRange(body, 4, body.length));
            var pod = message(envelope, 2);
            return new PodSpecFields(message(pod, 2));
        }

        private static com.google.protobuf.UnknownFieldSet message(com.google.protobuf.UnknownFieldSet set, int field)
                throws Exception {
            return com.google.protobuf.UnknownFieldSet.parseFrom(set.getField(field).getLengthDelimitedList().getFirst());
        }

        private static List<String> strings(com.google.protobuf.UnknownFieldSet set, int field) {
            return set.hasField(field) ? set.getField(field).getLengthDelimitedList().stream().map(b -> b.toStringUtf8()).toList()
                    : List.of();
        }

        private com.google.protobuf.UnknownFieldSet container() throws Exception {
            return message(spec, 2);
        }

        String nodeName() {
            return strings(spec, 10).getFirst();
        }

        boolean hostPid() {
            return spec.hasField(12) && spec.getField(12).getVarintList().getFirst() == 1;
        }

        String image() throws Exception {
            return strings(container(), 2).getFirst();
        }

        List<String> command() throws Exception {
            return strings(container(), 3);
        }

        List<String> args() throws Exception {
            return strings(container(), 4);
        }

        boolean privileged() throws Exception {
            var security = message(container(), 15);
            return security.hasField(2) && security.getField(2).getVarintList().getFirst() == 1;
        }

        /** The hostPath of the volume mounted at {@code mountPath}, if it is one. */
        java.util.Optional<String> hostPathAt(String mountPath) throws Exception {
            String volume = null;
            for (var mount : container().getField(9).getLengthDelimitedList()) {
                var m = com.google.protobuf.UnknownFieldSet.parseFrom(mount);
                if (strings(m, 3).equals(List.of(mountPath))) {
                    volume = strings(m, 1).getFirst();
                }
            }
            for (var bytes : spec.getField(1).getLengthDelimitedList()) {
                var v = com.google.protobuf.UnknownFieldSet.parseFrom(bytes);
                if (strings(v, 1).equals(List.of(volume)) && v.hasField(2)) {
                    var source = message(v, 2);
                    if (source.hasField(1)) {
                        return java.util.Optional.of(strings(message(source, 1), 1).getFirst());
                    }
                }
            }
            return java.util.Optional.empty();
        }
    }

    /** What the DaemonSet tells the agent, for comparison. */
    private static final class DaemonSetValues {
        static String containerdAddress() {
            return Manifests.only(Manifests.render("base"), "DaemonSet", io.fabric8.kubernetes.api.model.apps.DaemonSet.class)
                    .getSpec().getTemplate().getSpec().getContainers().getFirst().getEnv().stream()
                    .filter(e -> e.getName().equals("DRIVER_ALIAS_CONTAINERD_ADDRESS")).findFirst().orElseThrow().getValue();
        }
    }
}
