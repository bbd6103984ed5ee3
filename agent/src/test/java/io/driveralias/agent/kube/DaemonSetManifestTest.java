package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.config.ConfigParser;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HTTPGetAction;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Toleration;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.FieldSource;

/**
 * The DaemonSet's privileges, exactly as documented, and its wiring to the agent's options, in
 * every install: each kustomize variant and the Helm chart with each one's documented values.
 */
@ParameterizedClass
@FieldSource("INSTALLS")
class DaemonSetManifestTest {

    static final List<String> INSTALLS = Manifests.INSTALLS;

    /**
     * The documented set (docs/privileges.md, one comment each in the manifest), each one
     * shown necessary by LeastPrivilegeIT.
     */
    private static final Set<String> CAPABILITIES = Set.of("SYS_PTRACE", "DAC_OVERRIDE", "CHOWN", "FOWNER");

    /** Read by the agent without being one of its options. */
    private static final Set<String> OTHER_VARIABLES = Set.of("NODE_NAME", "POD_UID", "DOCKER_HOST");

    @Parameter
    String install;

    private DaemonSet daemonSet;
    private PodSpec pod;
    private Container agent;

    @BeforeEach
    void load() throws Exception {
        daemonSet = Manifests.only(Manifests.render(install), "DaemonSet", DaemonSet.class);
        pod = daemonSet.getSpec().getTemplate().getSpec();
        assertThat(pod.getContainers()).hasSize(1);
        assertThat(pod.getInitContainers()).isNullOrEmpty();
        agent = pod.getContainers().getFirst();
    }

    @Test
    void isAnAppsV1DaemonSetRunningTheAgentsRunCommand() {
        assertThat(daemonSet.getApiVersion()).isEqualTo("apps/v1");
        assertThat(daemonSet.getSpec().getSelector().getMatchLabels())
                .isEqualTo(daemonSet.getSpec().getTemplate().getMetadata().getLabels().entrySet().stream()
                        .filter(e -> daemonSet.getSpec().getSelector().getMatchLabels().containsKey(e.getKey()))
                        .collect(Collectors.toMap(e -> e.getKey(), e -> e.getValue())));
        assertThat(agent.getArgs()).containsExactly("run");
        assertThat(agent.getCommand()).isNullOrEmpty();
    }

    @Test
    void rootWithAllCapabilitiesDroppedAndOnlyTheDocumentedOnesBack() {
        var security = agent.getSecurityContext();

        assertThat(security.getPrivileged()).isFalse();
        assertThat(security.getAllowPrivilegeEscalation()).isFalse();
        assertThat(security.getReadOnlyRootFilesystem()).isTrue();
        assertThat(security.getRunAsUser()).isZero();
        assertThat(security.getCapabilities().getDrop()).containsExactly("ALL");
        assertThat(security.getCapabilities().getAdd()).doesNotHaveDuplicates()
                .containsExactlyInAnyOrderElementsOf(CAPABILITIES);
        assertThat(security.getProcMount()).isNull();
        assertThat(pod.getSecurityContext().getSeccompProfile().getType()).isEqualTo("RuntimeDefault");
    }

    @Test
    void sharesOnlyTheHostsPidNamespace() {
        assertThat(pod.getHostPID()).isTrue();
        assertThat(pod.getHostNetwork()).isNotEqualTo(Boolean.TRUE);
        assertThat(pod.getHostIPC()).isNotEqualTo(Boolean.TRUE);
    }

    @Test
    void mountsTheRuntimesSocketsTheirDataAndAWritableTmpAndNoOtherHostPath() {
        List<Volume> hostPaths = pod.getVolumes().stream().filter(v -> v.getHostPath() != null).toList();
        assertThat(hostPaths).extracting(v -> v.getHostPath().getPath()).containsExactlyInAnyOrder("/run", "/var/lib");
        // The sockets through their directory: a socket path that does not exist on a node (Docker's
        // on a containerd node) would keep the pod from starting.
        Volume run = volume(hostPaths, "/run");
        assertThat(run.getHostPath().getType()).isEqualTo("Directory");
        VolumeMount runMount = mountOf(run.getName());
        assertThat(runMount.getMountPath()).isEqualTo("/host/run");
        assertThat(runMount.getReadOnly()).isTrue();
        // containerd's later mounts there (a started task's root) appear in the pod.
        assertThat(runMount.getMountPropagation()).isEqualTo("HostToContainer");
        // where the agent is told to look, under that mount
        assertThat(envValue("DRIVER_ALIAS_DOCKER_HOST")).isEqualTo("unix:///host/run/docker.sock");
        assertThat(envValue("DRIVER_ALIAS_CONTAINERD_ADDRESS")).isEqualTo("unix:///host/run/containerd/containerd.sock");
        assertThat(envValue("DRIVER_ALIAS_CONTAINERD_STATE")).isEqualTo("/host/run/containerd");

        // The runtimes' data: one directory every node has (Directory, never created: a node
        // without Docker or without containerd is left as it was), at the node's own path (the
        // agent opens the paths the runtimes report), writable (the aliases go into a created
        // container's writable layer), and the node's later mounts there (a starting container's
        // overlay) appear in the pod; the pod's own never reach the node.
        Volume data = volume(hostPaths, "/var/lib");
        assertThat(data.getHostPath().getType()).isEqualTo("Directory");
        VolumeMount dataMount = mountOf(data.getName());
        assertThat(dataMount.getMountPath()).isEqualTo("/var/lib");
        assertThat(dataMount.getReadOnly()).isNotEqualTo(Boolean.TRUE);
        assertThat(dataMount.getMountPropagation()).isEqualTo("HostToContainer");
        // What each runtime's data is found under, k3s's and RKE2's too.
        for (String path : List.of("/var/lib/docker/overlay2", "/var/lib/docker/containers",
                "/var/lib/docker/image/overlay2/layerdb", "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs",
                "/var/lib/rancher/k3s/agent/containerd", "/var/lib/rancher/rke2/agent/containerd")) {
            assertThat(path).startsWith(dataMount.getMountPath() + "/");
        }
        // No hostPath is created on a node: nothing left behind where a runtime is missing.
        assertThat(hostPaths).extracting(v -> v.getHostPath().getType()).containsOnly("Directory");

        Volume tmp = pod.getVolumes().stream().filter(v -> v.getEmptyDir() != null).findFirst().orElseThrow();
        assertThat(mountOf(tmp.getName()).getMountPath()).isEqualTo("/tmp");
        assertThat(mountOf(tmp.getName()).getReadOnly()).isNotEqualTo(Boolean.TRUE);
    }

    @Test
    void theAgentKnowsItsOwnPod() {
        EnvVar uid = env().stream().filter(e -> e.getName().equals("POD_UID")).findFirst().orElseThrow();
        assertThat(uid.getValueFrom().getFieldRef().getFieldPath()).isEqualTo("metadata.uid");
    }

    private static Volume volume(List<Volume> hostPaths, String path) {
        return hostPaths.stream().filter(v -> v.getHostPath().getPath().equals(path)).findFirst().orElseThrow();
    }

    private String envValue(String name) {
        return env().stream().filter(e -> e.getName().equals(name)).map(EnvVar::getValue).findFirst().orElseThrow();
    }

    private VolumeMount mountOf(String volume) {
        return agent.getVolumeMounts().stream().filter(m -> m.getName().equals(volume)).findFirst().orElseThrow();
    }

    @Test
    void probesAskHealthzAndReadyzOnTheListenPort() {
        int listenPort = listenPort();
        ContainerPort port = agent.getPorts().stream().filter(p -> p.getContainerPort() == listenPort).findFirst()
                .orElseThrow(() -> new AssertionError("no container port " + listenPort));
        assertThat(port.getName()).isEqualTo("metrics");

        HTTPGetAction liveness = agent.getLivenessProbe().getHttpGet();
        HTTPGetAction readiness = agent.getReadinessProbe().getHttpGet();
        assertThat(liveness.getPath()).isEqualTo("/healthz");
        assertThat(readiness.getPath()).isEqualTo("/readyz");
        for (HTTPGetAction probe : List.of(liveness, readiness)) {
            var target = probe.getPort();
            assertThat(target.getIntVal() != null ? target.getIntVal().equals(listenPort)
                    : target.getStrVal().equals(port.getName())).as("probe port %s", target).isTrue();
        }
    }

    /** The port of DRIVER_ALIAS_LISTEN if the DaemonSet sets it, else of --listen's default. */
    private int listenPort() {
        String listen = env().stream().filter(e -> e.getName().equals("DRIVER_ALIAS_LISTEN")).map(EnvVar::getValue)
                .findFirst().orElse(ConfigParser.OPTIONS.stream().filter(o -> o.name().equals("listen"))
                        .findFirst().orElseThrow().defaultValue());
        return Integer.parseInt(listen.substring(listen.lastIndexOf(':') + 1));
    }

    private List<EnvVar> env() {
        return agent.getEnv() == null ? List.of() : agent.getEnv();
    }

    @Test
    void everyVariableItSetsIsOneTheAgentReads() {
        Set<String> known = new HashSet<>(OTHER_VARIABLES);
        ConfigParser.OPTIONS.forEach(o -> known.add(o.environmentVariable()));

        assertThat(env()).extracting(EnvVar::getName).doesNotHaveDuplicates().isSubsetOf(known);
        assertThat(agent.getEnvFrom()).isNullOrEmpty();
    }

    /**
     * No JVM options from the environment: the JVM announces each of these variables on stderr in
     * plain text ("Picked up JAVA_TOOL_OPTIONS: ..."), ahead of the JSON log. The options are the
     * image's argument file (JvmOptionsTest).
     */
    @Test
    void setsNoJvmOptionsInTheEnvironment() {
        assertThat(env()).extracting(EnvVar::getName)
                .doesNotContain("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS", "JAVA_OPTS");
    }

    @Test
    void theNodeNameComesFromTheDownwardApi() {
        EnvVar node = env().stream().filter(e -> e.getName().equals("NODE_NAME")).findFirst().orElseThrow();
        assertThat(node.getValueFrom().getFieldRef().getFieldPath()).isEqualTo("spec.nodeName");
    }

    @Test
    void runsOnGpuNodesDespiteTheirTaintsAsNodeCritical() {
        // Which nodes: NodeSchedulingTest evaluates the affinity on every variant.
        assertThat(pod.getNodeSelector()).isNullOrEmpty();
        // Every taint, with any effect, for as long as it lasts (node-problem-detector's list).
        assertThat(pod.getTolerations()).singleElement().satisfies((Toleration t) -> {
            assertThat(t.getOperator()).isEqualTo("Exists");
            assertThat(t.getKey()).isNull();
            assertThat(t.getValue()).isNull();
            assertThat(t.getEffect()).isNull();
            assertThat(t.getTolerationSeconds()).isNull();
        });
        // Admitted outside kube-system by the quota: PriorityAdmissionTest.
        assertThat(pod.getPriorityClassName()).isEqualTo("system-node-critical");
    }

    @Test
    void requestsAndLimitsAreSet() {
        var resources = agent.getResources();
        assertThat(resources.getRequests()).containsKeys("cpu", "memory");
        assertThat(resources.getLimits()).containsKey("memory");
    }

    @Test
    void usesTheAgentsServiceAccountToken() {
        assertThat(pod.getServiceAccountName()).isEqualTo("driver-alias-agent");
        assertThat(pod.getAutomountServiceAccountToken()).isNotEqualTo(Boolean.FALSE);
    }
}
