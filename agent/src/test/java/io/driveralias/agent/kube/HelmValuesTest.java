package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.config.AgentConfig;
import io.driveralias.agent.config.ConfigParser;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Each value of the DaemonSet lands where values.yaml says, changes nothing else, and gives the
 * agent settings it accepts: the agent's own parser reads the rendered variables and arguments.
 */
class HelmValuesTest {

    /** The base's chart twin, as installed with no values. */
    private static final String PLAIN = Manifests.CHART + "base";

    private static List<HasMetadata> render(Path tmp, String yaml) {
        return HelmChart.render(PLAIN, HelmChart.valuesFile(tmp, "values", yaml));
    }

    private static DaemonSet daemonSet(List<HasMetadata> rendered) {
        return Manifests.only(rendered, "DaemonSet", DaemonSet.class);
    }

    private static PodSpec pod(List<HasMetadata> rendered) {
        return daemonSet(rendered).getSpec().getTemplate().getSpec();
    }

    private static Container agent(List<HasMetadata> rendered) {
        return pod(rendered).getContainers().stream().filter(c -> c.getName().equals("agent")).findFirst().orElseThrow();
    }

    private static Map<String, String> env(Container agent) {
        Map<String, String> env = new HashMap<>();
        for (EnvVar e : agent.getEnv()) {
            env.put(e.getName(), e.getValue() != null ? e.getValue() : switch (e.getName()) {
                case "NODE_NAME" -> "gpu-node-1";
                case "POD_UID" -> "0f3c6a52-2b8e-4c1a-9d3e-6f1a2b3c4d5e";
                default -> throw new AssertionError("no value for " + e.getName());
            });
        }
        return env;
    }

    /** The agent's configuration from the rendered container, as the agent's own parser makes it. */
    private static AgentConfig config(Container agent) throws Exception {
        return ConfigParser.parse(agent.getArgs(), env(agent));
    }

    @Test
    void theAgentAcceptsWhatTheRuntimeNriAndLoggingValuesTellIt(@TempDir Path tmp) throws Exception {
        Container agent = agent(render(tmp, """
                runtimes: {watch: [containerd, nri], containerdSocket: /var/run/containerd/containerd.sock}
                nri: {deadline: 250ms}
                logLevel: debug
                extraArgs: [--exclude-image, "*/pause:*"]
                extraEnv: [{name: DRIVER_ALIAS_WORKERS, value: "4"}, {name: DRIVER_ALIAS_LOG_FORMAT, value: text}]
                """));
        AgentConfig config = config(agent);

        assertThat(config.runtimes()).containsExactly("containerd", "nri");
        assertThat(config.containerdAddress()).isEqualTo("unix:///host/run/containerd/containerd.sock");
        assertThat(config.nriDeadline()).isEqualTo(Duration.ofMillis(250));
        assertThat(config.logLevel()).isEqualTo(AgentConfig.LogLevel.DEBUG);
        assertThat(config.excludeImages()).containsExactly("*/pause:*");
        // extraEnv replaces a shipped variable of the same name, and adds the others.
        assertThat(config.workers()).isEqualTo(4);
        assertThat(config.logFormat()).isEqualTo(AgentConfig.LogFormat.TEXT);
        assertThat(agent.getEnv()).extracting(EnvVar::getName).doesNotHaveDuplicates();
    }

    /**
     * The sockets and state directory are given as the node's paths; what the agent is told is that
     * very file through the DaemonSet's mounts (/var/run being /run).
     */
    @Test
    void theRuntimePathsTheAgentIsToldAreTheNodesFilesThroughItsMounts(@TempDir Path tmp) throws Exception {
        List<HasMetadata> rendered = render(tmp, """
                runtimes: {dockerSocket: /var/run/docker.sock, containerdSocket: /run/k3s/containerd/containerd.sock,
                           containerdState: /run/k3s/containerd}
                nri: {socket: /var/run/nri/nri.sock}
                """);
        AgentConfig config = config(agent(rendered));

        assertThat(nodePath(rendered, config.dockerHost().substring("unix://".length()))).hasValue("/run/docker.sock");
        assertThat(nodePath(rendered, config.containerdAddress().substring("unix://".length())))
                .hasValue("/run/k3s/containerd/containerd.sock");
        assertThat(nodePath(rendered, config.containerdState())).hasValue("/run/k3s/containerd");
        assertThat(nodePath(rendered, config.nriSocket())).hasValue("/run/nri/nri.sock");
    }

    /**
     * NRI off: the agent is told no NRI socket, and the one it then looks for, its own default, is a
     * path of its read-only image under none of its mounts, where no socket is ever created.
     */
    @Test
    void withNriOffTheAgentLooksForItsSocketWhereNoneCanBe(@TempDir Path tmp) throws Exception {
        List<HasMetadata> rendered = render(tmp, "nri: {enabled: false}\n");
        Container agent = agent(rendered);
        AgentConfig config = config(agent);

        assertThat(agent.getEnv()).extracting(EnvVar::getName).doesNotContain("DRIVER_ALIAS_NRI_SOCKET");
        assertThat(config.nriSocket()).isEqualTo(ConfigParser.OPTIONS.stream().filter(o -> o.name().equals("nri-socket"))
                .findFirst().orElseThrow().defaultValue());
        assertThat(nodePath(rendered, config.nriSocket())).isEmpty();
        assertThat(agent.getSecurityContext().getReadOnlyRootFilesystem()).isTrue();
        // Everything else as shipped.
        List<EnvVar> shipped = new java.util.ArrayList<>(agent(HelmChart.render(PLAIN)).getEnv());
        shipped.removeIf(e -> e.getName().equals("DRIVER_ALIAS_NRI_SOCKET"));
        assertThat(agent.getEnv()).isEqualTo(shipped);
    }

    /** The node's path behind a path of the agent's container, if a hostPath volume is mounted above it. */
    private static Optional<String> nodePath(List<HasMetadata> rendered, String podPath) {
        PodSpec pod = pod(rendered);
        for (VolumeMount mount : agent(rendered).getVolumeMounts()) {
            if (!podPath.startsWith(mount.getMountPath() + "/")) {
                continue;
            }
            Volume volume = pod.getVolumes().stream().filter(v -> v.getName().equals(mount.getName())).findFirst()
                    .orElseThrow();
            return Optional.ofNullable(volume.getHostPath())
                    .map(h -> h.getPath() + podPath.substring(mount.getMountPath().length()));
        }
        return Optional.empty();
    }

    @Test
    void theImageIsTheReleasesUnlessTheValuesNameAnother(@TempDir Path tmp) {
        assertThat(agent(HelmChart.render(PLAIN)).getImage())
                .isEqualTo("driver-alias-agent:" + io.driveralias.agent.metrics.RepoFiles.projectVersion());

        String digest = "sha256:" + "0123456789abcdef".repeat(4);
        List<HasMetadata> rendered = render(tmp, """
                image: {repository: registry.example.com/gpu/driver-alias-agent, tag: "9.9.9", digest: "%s", pullPolicy: Always}
                imagePullSecrets: [{name: my-registry}]
                """.formatted(digest));

        assertThat(agent(rendered).getImage()).isEqualTo("registry.example.com/gpu/driver-alias-agent:9.9.9@" + digest);
        assertThat(agent(rendered).getImagePullPolicy()).isEqualTo("Always");
        assertThat(pod(rendered).getImagePullSecrets()).singleElement().satisfies(s -> assertThat(s.getName())
                .isEqualTo("my-registry"));
    }

    /** A request set alone changes that request alone: the shipped others stay (docs/kubernetes.md#cpu-request). */
    @Test
    void resourcesAreMergedOverTheShippedOnes(@TempDir Path tmp) {
        var shipped = agent(HelmChart.render(PLAIN)).getResources();
        var changed = agent(render(tmp, "resources: {requests: {cpu: 100m}, limits: {memory: 256Mi}}\n")).getResources();

        assertThat(changed.getRequests().get("cpu")).isEqualTo(new Quantity("100m"));
        assertThat(changed.getLimits().get("memory")).isEqualTo(new Quantity("256Mi"));
        assertThat(changed.getRequests().get("memory")).isEqualTo(shipped.getRequests().get("memory"));
        assertThat(changed.getRequests()).containsOnlyKeys(shipped.getRequests().keySet());
        assertThat(changed.getLimits()).containsOnlyKeys(shipped.getLimits().keySet());
    }

    /** A node selector narrows the GPU nodes (ANDed); an affinity or a toleration list replaces the shipped one. */
    @Test
    void nodeSelectionValuesAddToOrReplaceTheShippedOnes(@TempDir Path tmp) {
        PodSpec shipped = pod(HelmChart.render(PLAIN));
        PodSpec narrowed = pod(render(tmp.resolve("a"), "nodeSelector: {node-pool: gpu-a100}\ntolerations: []\n"));
        PodSpec replaced = pod(render(tmp.resolve("b"), """
                affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms:
                  [{matchExpressions: [{key: gpu, operator: Exists}]}]}}}
                priorityClassName: gpu-node-agents
                """));

        assertThat(narrowed.getNodeSelector()).containsExactly(Map.entry("node-pool", "gpu-a100"));
        assertThat(narrowed.getAffinity()).isEqualTo(shipped.getAffinity());
        assertThat(narrowed.getTolerations()).isEmpty();
        assertThat(replaced.getAffinity().getNodeAffinity().getRequiredDuringSchedulingIgnoredDuringExecution()
                .getNodeSelectorTerms()).singleElement().satisfies(t -> assertThat(t.getMatchExpressions())
                        .singleElement().satisfies(e -> assertThat(e.getKey()).isEqualTo("gpu")));
        assertThat(replaced.getTolerations()).isEqualTo(shipped.getTolerations());
        assertThat(replaced.getPriorityClassName()).isEqualTo("gpu-node-agents");
    }

    /** Labels and annotations for the pods; the shipped labels, which the selector matches, stay as they are. */
    @Test
    void podLabelsAndAnnotationsLeaveTheSelectorAlone(@TempDir Path tmp) {
        DaemonSet shipped = daemonSet(HelmChart.render(PLAIN));
        DaemonSet labelled = daemonSet(render(tmp, """
                podLabels: {team: ml, app.kubernetes.io/name: something-else}
                podAnnotations: {example.com/owner: gpu-platform}
                """));

        assertThat(labelled.getSpec().getSelector()).isEqualTo(shipped.getSpec().getSelector());
        assertThat(labelled.getSpec().getTemplate().getMetadata().getLabels())
                .containsAllEntriesOf(shipped.getSpec().getTemplate().getMetadata().getLabels())
                .containsEntry("team", "ml");
        assertThat(labelled.getSpec().getTemplate().getMetadata().getAnnotations())
                .containsExactly(Map.entry("example.com/owner", "gpu-platform"));
    }

    /** No value gives the agent a privilege: the container's and the pod's security settings stay the shipped ones. */
    @Test
    void noValueChangesThePrivileges(@TempDir Path tmp) {
        List<HasMetadata> shipped = HelmChart.render(PLAIN);
        List<HasMetadata> everything = render(tmp, """
                image: {repository: r.example.com/daa, tag: "1.0.0"}
                resources: {requests: {cpu: 1}}
                runtimes: {k3sRke2: true, watch: [auto]}
                nri: {deadline: 1999ms}
                webConfig: {config: {basic_auth_users: {prometheus: "$2y$10$abcdefghijklmnopqrstuv"}}}
                extraArgs: [--resync-interval, 120s]
                extraVolumes: [{name: docker-data, hostPath: {path: /data/docker, type: Directory}}]
                extraVolumeMounts: [{name: docker-data, mountPath: /data/docker}]
                """);

        assertThat(agent(everything).getSecurityContext()).isEqualTo(agent(shipped).getSecurityContext());
        PodSpec pod = pod(everything);
        assertThat(pod.getSecurityContext()).isEqualTo(pod(shipped).getSecurityContext());
        assertThat(pod.getHostPID()).isEqualTo(pod(shipped).getHostPID());
        assertThat(pod.getHostNetwork()).isEqualTo(pod(shipped).getHostNetwork());
        assertThat(pod.getHostIPC()).isEqualTo(pod(shipped).getHostIPC());
        assertThat(pod.getServiceAccountName()).isEqualTo(pod(shipped).getServiceAccountName());
    }
}
