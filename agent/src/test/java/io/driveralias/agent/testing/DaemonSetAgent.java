package io.driveralias.agent.testing;

import io.fabric8.kubernetes.api.model.Capabilities;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.PodSecurityContext;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.SeccompProfile;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.UnaryOperator;

/**
 * The agent container of {@code k8s/base/040-daemonset.yaml} turned into {@code docker run} options,
 * the way the kubelet sets it up on a Docker node: capabilities, user, no-new-privileges,
 * read-only root, host PID namespace, seccomp, hostPath and emptyDir volumes, environment,
 * memory limit and arguments. Whatever in the manifest it cannot translate fails loudly, so a
 * test built on it runs what the manifest says or nothing.
 */
public final class DaemonSetAgent {

    /** The test's stand-ins for what only a node has. */
    public record Substitutions(
            /** A hostPath of the manifest -> the path on this machine that plays its part. */
            UnaryOperator<String> hostPath,
            /**
             * A mountPath of the manifest -> where to mount it here: where the agent finds it by
             * configuration (the socket), the same; where it follows paths Docker reports (the
             * layers), this machine's.
             */
            UnaryOperator<String> mountPath,
            /** Downward API field paths (e.g. spec.nodeName) -> value; "" leaves the variable out. */
            Map<String, String> fieldRefs,
            /** Variables set differently from the manifest (the test says why). */
            Map<String, String> envOverrides,
            /** Capabilities of the manifest's add list left out (the experiment). */
            Set<String> withoutCapabilities) {
    }

    /**
     * The manifest's hostPaths played by a test Docker engine: the node's /run by the engine's
     * own directory (which holds its socket as docker.sock, where the manifest's
     * DRIVER_ALIAS_DOCKER_HOST looks), the node's /var/lib (and Docker's data root in it) by the
     * engine's data root, containerd's directories by empty ones (no containerd on this node).
     * Anything else is refused.
     */
    public static UnaryOperator<String> hostPathsOf(DockerHarness docker) {
        String dataRoot = docker.run("info", "--format", "{{.DockerRootDir}}");
        String socket = docker.host().substring("unix://".length());
        if (!socket.endsWith("/docker.sock")) {
            throw new IllegalStateException("the engine's socket is not named docker.sock: " + socket);
        }
        Path noContainerd;
        try {
            noContainerd = java.nio.file.Files.createTempDirectory("daa-no-containerd-");
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return path -> {
            if (path.equals("/run")) {
                return socket.substring(0, socket.length() - "/docker.sock".length());
            }
            if (path.equals("/var/lib")) {
                // The node's /var/lib holds Docker's data root as /var/lib/docker; the engine's own
                // data root plays it, mounted where Docker reports its paths (mountPathsOf). A node
                // without containerd has nothing of containerd's there.
                return dataRoot;
            }
            if (path.equals("/var/lib/docker") || path.startsWith("/var/lib/docker/")) {
                return dataRoot + path.substring("/var/lib/docker".length());
            }
            if (path.startsWith("/var/lib/containerd/")) {
                return noContainerd.toString();
            }
            throw new IllegalStateException("no stand-in for the hostPath " + path);
        };
    }

    /** Where the agent's container finds a hostPath: Docker's data root at the engine's own path (it follows the paths Docker reports). */
    public static UnaryOperator<String> mountPathsOf(DockerHarness docker) {
        String dataRoot = docker.run("info", "--format", "{{.DockerRootDir}}");
        return path -> path.equals("/var/lib") ? dataRoot
                : path.equals("/var/lib/docker") || path.startsWith("/var/lib/docker/")
                ? dataRoot + path.substring("/var/lib/docker".length()) : path;
    }

    private final PodSpec pod;
    private final Container agent;

    private DaemonSetAgent(PodSpec pod, Container agent) {
        this.pod = pod;
        this.agent = agent;
    }

    public static DaemonSetAgent load() {
        Path file = k8sDirectory().resolve("base/040-daemonset.yaml");
        try (InputStream in = Files.newInputStream(file)) {
            DaemonSet daemonSet = new KubernetesSerialization().unmarshal(in, DaemonSet.class);
            PodSpec pod = daemonSet.getSpec().getTemplate().getSpec();
            if (pod.getContainers().size() != 1) {
                throw new IllegalStateException(file + ": expected one container, found " + pod.getContainers().size());
            }
            return new DaemonSetAgent(pod, pod.getContainers().getFirst());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** {@code k8s/} at the repository root; the ITs run in {@code agent/}. */
    static Path k8sDirectory() {
        Path base = Path.of(System.getProperty("basedir", ".")).toAbsolutePath();
        for (Path dir = base; dir != null; dir = dir.getParent()) {
            if (Files.isRegularFile(dir.resolve("k8s/base/kustomization.yaml"))) {
                return dir.resolve("k8s");
            }
        }
        throw new IllegalStateException("no k8s/base/kustomization.yaml above " + base);
    }

    public List<String> addedCapabilities() {
        return List.copyOf(capabilities().getAdd());
    }

    public List<String> args() {
        if (agent.getCommand() != null && !agent.getCommand().isEmpty()) {
            throw new IllegalStateException("the manifest overrides the image's entrypoint: not translated");
        }
        return agent.getArgs() == null ? List.of() : List.copyOf(agent.getArgs());
    }

    /** The literal value of an environment variable of the agent container; empty if it has none. */
    public java.util.Optional<String> environmentValue(String name) {
        return (agent.getEnv() == null ? List.<EnvVar>of() : agent.getEnv()).stream()
                .filter(e -> e.getName().equals(name) && e.getValueFrom() == null)
                .map(e -> e.getValue() == null ? "" : e.getValue()).findFirst();
    }

    /** The container's memory limit in bytes, if it has one. */
    public java.util.OptionalLong memoryLimitBytes() {
        Map<String, Quantity> limits = agent.getResources() == null ? null : agent.getResources().getLimits();
        return limits == null || !limits.containsKey("memory") ? java.util.OptionalLong.empty()
                : java.util.OptionalLong.of(Quantity.getAmountInBytes(limits.get("memory")).longValueExact());
    }

    /** The container's CPU request in millicores: its weight when the node's CPUs are all busy. */
    public int cpuRequestMillicores() {
        Map<String, Quantity> requests = agent.getResources() == null ? null : agent.getResources().getRequests();
        if (requests == null || !requests.containsKey("cpu")) {
            throw new IllegalStateException("the agent container requests no CPU");
        }
        return Quantity.getAmountInBytes(requests.get("cpu")).multiply(java.math.BigDecimal.valueOf(1000)).intValue();
    }

    /** How long the kubelet waits for an answer to the liveness or the readiness probe, whichever is shorter. */
    public java.time.Duration probeTimeout() {
        // A probe without timeoutSeconds gets Kubernetes' default, 1 s.
        int seconds = java.util.stream.Stream.of(agent.getLivenessProbe(), agent.getReadinessProbe()).filter(java.util.Objects::nonNull)
                .mapToInt(p -> p.getTimeoutSeconds() == null ? 1 : p.getTimeoutSeconds()).min()
                .orElseThrow(() -> new IllegalStateException("the agent container has no liveness or readiness probe"));
        return java.time.Duration.ofSeconds(seconds);
    }

    /** How long the kubelet waits after SIGTERM, for {@code docker stop -t}. */
    public long terminationGraceSeconds() {
        return pod.getTerminationGracePeriodSeconds() == null ? 30 : pod.getTerminationGracePeriodSeconds();
    }

    /** The hostPath volumes and where they are mounted: host path -> mount path. */
    public Map<String, String> hostPathMounts() {
        Map<String, String> mounts = new java.util.LinkedHashMap<>();
        for (VolumeMount m : agent.getVolumeMounts()) {
            Volume v = volume(m.getName());
            if (v.getHostPath() != null) {
                mounts.put(v.getHostPath().getPath(), m.getMountPath());
            }
        }
        return mounts;
    }

    /** Options for {@code docker run} (everything before the image name). */
    public List<String> dockerRunOptions(Substitutions s) {
        List<String> options = new ArrayList<>();
        podLevel(options);
        containerSecurity(options, s.withoutCapabilities());
        volumes(options, s.hostPath(), s.mountPath());
        environment(options, s);
        Map<String, Quantity> limits = agent.getResources() == null ? null : agent.getResources().getLimits();
        if (limits != null && limits.containsKey("memory")) {
            options.addAll(List.of("--memory", bytes(limits.get("memory"))));
        }
        return options;
    }

    private void podLevel(List<String> options) {
        if (Boolean.TRUE.equals(pod.getHostPID())) {
            options.addAll(List.of("--pid", "host"));
        }
        if (Boolean.TRUE.equals(pod.getHostIPC())) {
            options.addAll(List.of("--ipc", "host"));
        }
        if (Boolean.TRUE.equals(pod.getHostNetwork())) {
            options.addAll(List.of("--network", "host"));
        }
        PodSecurityContext security = pod.getSecurityContext();
        if (security != null) {
            if (security.getRunAsUser() != null || security.getRunAsGroup() != null || security.getFsGroup() != null
                    || !isEmpty(security.getSupplementalGroups()) || !isEmpty(security.getSysctls())
                    || security.getSeLinuxOptions() != null || security.getAppArmorProfile() != null) {
                throw new IllegalStateException("pod securityContext settings not translated: " + security);
            }
            seccomp(options, security.getSeccompProfile());
        }
    }

    private void containerSecurity(List<String> options, Set<String> without) {
        SecurityContext security = agent.getSecurityContext();
        if (security == null) {
            throw new IllegalStateException("the agent container has no securityContext");
        }
        if (security.getProcMount() != null || security.getSeLinuxOptions() != null
                || security.getAppArmorProfile() != null || security.getWindowsOptions() != null) {
            throw new IllegalStateException("container securityContext settings not translated: " + security);
        }
        if (Boolean.TRUE.equals(security.getPrivileged())) {
            options.add("--privileged");
        }
        if (security.getRunAsUser() != null) {
            options.addAll(List.of("--user", security.getRunAsUser()
                    + (security.getRunAsGroup() == null ? "" : ":" + security.getRunAsGroup())));
        }
        if (Boolean.FALSE.equals(security.getAllowPrivilegeEscalation())) {
            options.addAll(List.of("--security-opt", "no-new-privileges"));
        }
        if (Boolean.TRUE.equals(security.getReadOnlyRootFilesystem())) {
            options.add("--read-only");
        }
        for (String drop : capabilities().getDrop()) {
            options.addAll(List.of("--cap-drop", drop));
        }
        for (String add : capabilities().getAdd()) {
            if (!without.contains(add)) {
                options.addAll(List.of("--cap-add", add));
            }
        }
        if (!capabilities().getAdd().containsAll(without)) {
            throw new IllegalArgumentException("not in the manifest's add list: " + without);
        }
        seccomp(options, security.getSeccompProfile());
    }

    private Capabilities capabilities() {
        Capabilities c = agent.getSecurityContext().getCapabilities();
        return c == null ? new Capabilities() : c;
    }

    /** RuntimeDefault is what Docker applies anyway (its default profile). */
    private static void seccomp(List<String> options, SeccompProfile profile) {
        if (profile == null || "RuntimeDefault".equals(profile.getType())) {
            return;
        }
        if ("Unconfined".equals(profile.getType())) {
            options.addAll(List.of("--security-opt", "seccomp=unconfined"));
            return;
        }
        throw new IllegalStateException("seccomp profile not translated: " + profile);
    }

    private void volumes(List<String> options, UnaryOperator<String> hostPath, UnaryOperator<String> mountPath) {
        for (VolumeMount m : agent.getVolumeMounts()) {
            String propagation = m.getMountPropagation() == null ? "None" : m.getMountPropagation();
            if (m.getSubPath() != null || m.getSubPathExpr() != null
                    || !(propagation.equals("None") || propagation.equals("HostToContainer"))) {
                throw new IllegalStateException("volume mount not translated: " + m);
            }
            Volume v = volume(m.getName());
            boolean readOnly = Boolean.TRUE.equals(m.getReadOnly());
            if (v.getHostPath() != null) {
                // HostToContainer is the kubelet's rslave: mounts made under the path on the host
                // later appear in the container too. (Docker makes a bind from inside its data
                // root rslave in any case, and refuses rprivate there.)
                options.addAll(List.of("--mount", "type=bind,source=" + hostPath.apply(v.getHostPath().getPath())
                        + ",target=" + mountPath.apply(m.getMountPath())
                        + (readOnly ? ",readonly" : "")
                        + (propagation.equals("HostToContainer") ? ",bind-propagation=rslave" : "")));
            } else if (v.getEmptyDir() != null) {
                // An emptyDir is a fresh writable directory of the pod; Docker's closest is a
                // tmpfs, sized to the limit (exec allowed, as on a node's disk).
                if (readOnly) {
                    throw new IllegalStateException("read-only emptyDir mount not translated: " + m);
                }
                String size = v.getEmptyDir().getSizeLimit() == null ? "" : ",size=" + bytes(v.getEmptyDir().getSizeLimit());
                options.addAll(List.of("--tmpfs", m.getMountPath() + ":rw,exec" + size));
            } else {
                throw new IllegalStateException("volume type not translated: " + v);
            }
        }
    }

    private void environment(List<String> options, Substitutions s) {
        List<String> seen = new ArrayList<>();
        for (EnvVar e : agent.getEnv() == null ? List.<EnvVar>of() : agent.getEnv()) {
            String value;
            if (s.envOverrides().containsKey(e.getName())) {
                value = s.envOverrides().get(e.getName());
            } else if (e.getValueFrom() != null) {
                if (e.getValueFrom().getFieldRef() == null
                        || !s.fieldRefs().containsKey(e.getValueFrom().getFieldRef().getFieldPath())) {
                    throw new IllegalStateException("variable " + e.getName() + " not translated: " + e.getValueFrom());
                }
                value = s.fieldRefs().get(e.getValueFrom().getFieldRef().getFieldPath());
                if (value.isEmpty()) {
                    // Not played here (no pod: no pod uid): the variable is left out.
                    continue;
                }
            } else {
                value = e.getValue() == null ? "" : e.getValue();
            }
            options.addAll(List.of("--env", e.getName() + "=" + value));
            seen.add(e.getName());
        }
        s.envOverrides().forEach((name, value) -> {
            if (!seen.contains(name)) {
                options.addAll(List.of("--env", name + "=" + value));
            }
        });
        if (agent.getEnvFrom() != null && !agent.getEnvFrom().isEmpty()) {
            throw new IllegalStateException("envFrom not translated");
        }
    }

    private Volume volume(String name) {
        return pod.getVolumes().stream().filter(v -> v.getName().equals(name)).findFirst()
                .orElseThrow(() -> new IllegalStateException("no volume " + name));
    }

    private static String bytes(Quantity quantity) {
        return Quantity.getAmountInBytes(quantity).toBigInteger().toString();
    }

    private static boolean isEmpty(List<?> list) {
        return list == null || list.isEmpty();
    }
}
