package io.driveralias.agent.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.metrics.RepoFiles;
import io.driveralias.agent.testing.AgentArchive;
import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.ContainerdHarness;
import io.driveralias.agent.testing.DaemonSetAgent;
import io.driveralias.agent.testing.Processes;
import io.driveralias.agent.testing.SharedEngines;
import io.driveralias.agent.testing.TestImages;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * The image as an operator of a containerd node gets it, with no Docker anywhere: the archive
 * {@code agent/image/build-rootfs.sh} packs with Jib, imported with {@code ctr -n k8s.io images
 * import} into a private containerd ({@link ContainerdHarness}); the README's {@code ctr run} line
 * of {@code check} and {@code repair} run from it; and the agent run from it as the DaemonSet runs
 * it (the host's PID namespace, exactly the manifest's four capabilities, a read-only root, the
 * manifest's memory limit and variables), ready and repairing a GPU container.
 *
 * <p>What this machine cannot give is played as in the other ITs: the node's {@code /run/containerd}
 * by the harness' directory (its socket, and its state in {@code state/}, which
 * DRIVER_ALIAS_CONTAINERD_STATE then names), the node's {@code /var/lib/containerd} by the harness'
 * root at its own path, the pod network by the host's (no CNI here; the agent listens on a free
 * loopback port), the host's driver by the test drivers' directories mounted read-only at their own
 * paths ({@code /proc/1/root} is refused here), the host's PID namespace by the test JVM's path to it
 * ({@code /proc/1/ns} is refused here too), and no API server ({@code DRIVER_ALIAS_KUBERNETES=off}).
 */
@Timeout(600)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@ResourceLock(SharedEngines.CONTAINERD)
class ContainerdImageIT {

    private static final Pattern CTR_LINE = Pattern.compile("<!-- ctr check line -->\\s*\\n```sh\\n(.*?)\\n```", Pattern.DOTALL);
    /** The capabilities containerd's default spec gives a container (Docker's set): what the agent's run drops. */
    private static final List<String> DEFAULT_CAPABILITIES = List.of("CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD",
            "NET_RAW", "SETGID", "SETUID", "SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE");
    private static final String LIB_DIR = RealContainers.LIB_DIR;
    private static final List<String> ENTRYPOINT = List.of("/opt/java/bin/java", "@/opt/driver-alias-agent/jvm.options", "-jar",
            "/opt/driver-alias-agent/driver-alias-agent.jar");
    /**
     * The host's PID namespace, as {@code ctr run --with-ns} joins it: a node's {@code /proc/1/ns/pid};
     * here the test JVM's own (the same namespace), because this machine refuses {@code /proc/1/ns}
     * even to root, as it refuses {@code /proc/1/root}.
     */
    private static final String HOST_PID_NAMESPACE = "/proc/" + ProcessHandle.current().pid() + "/ns/pid";

    static ContainerdHarness containerd;
    static String image;

    @BeforeAll
    static void importTheArchive() {
        containerd = ContainerdHarness.get();
        containerd.debianImage(ContainerdHarness.K8S);
        Path archive = AgentArchive.get();
        String imported = containerd.run("-n", ContainerdHarness.K8S, "images", "import", archive.toString());
        image = "docker.io/library/" + AgentArchive.name();
        System.out.println("[containerd-image] " + archive + " (" + archive.toFile().length() / (1 << 20) + " MiB) imported:\n"
                + imported.trim());
    }

    /** The archive is an OCI layout with Docker's manifest beside it, one image, its programs executable. */
    @Test
    @Order(1)
    void theArchiveIsAnOciLayoutWithDockersManifestBeside(@TempDir Path tmp) throws IOException {
        Path archive = AgentArchive.get();
        List<String> entries = Processes.check(List.of("tar", "-tf", archive.toString())).lines().toList();
        assertThat(entries).contains("oci-layout", "index.json", "manifest.json").allMatch(e -> e.equals("oci-layout")
                || e.equals("index.json") || e.equals("manifest.json") || e.matches("blobs/(sha256/([0-9a-f]{64})?)?"));
        Processes.check(List.of("tar", "-xf", archive.toString(), "-C", tmp.toString()));
        String index = Files.readString(tmp.resolve("index.json"));
        assertThat(index).contains("\"org.opencontainers.image.ref.name\":\"" + AgentArchive.name() + "\"")
                // containerd's import takes this one as it is: the name the kubelet asks for.
                .contains("\"io.containerd.image.name\":\"docker.io/library/" + AgentArchive.name() + "\"");
        String docker = Files.readString(tmp.resolve("manifest.json"));
        assertThat(docker).contains("\"RepoTags\":[\"" + AgentArchive.name() + "\"]");
        // The config both manifests name: the Dockerfile's entry point, root, the labels.
        Matcher config = Pattern.compile("\"Config\":\"(blobs/sha256/[0-9a-f]{64})\"").matcher(docker);
        assertThat(config.find()).isTrue();
        String configJson = Files.readString(tmp.resolve(config.group(1)));
        assertThat(configJson).contains("\"Entrypoint\":[\"/opt/java/bin/java\",\"@/opt/driver-alias-agent/jvm.options\","
                + "\"-jar\",\"/opt/driver-alias-agent/driver-alias-agent.jar\"]", "\"Cmd\":[\"run\"]", "\"User\":\"0:0\"",
                "\"org.opencontainers.image.version\":\"" + AgentArchive.version() + "\"", "\"architecture\":\"amd64\"");
        // Every layer's programs executable, the loader too; the rest not.
        StringBuilder listing = new StringBuilder();
        for (String layer : Pattern.compile("\"(blobs/sha256/[0-9a-f]{64})\"").matcher(docker.substring(docker.indexOf("Layers")))
                .results().map(r -> r.group(1)).toList()) {
            listing.append(Processes.check(List.of("tar", "-tvzf", tmp.resolve(layer).toString())));
        }
        assertThat(listing).containsPattern("-rwxr-xr-x \\S+ +\\d+ \\S+ \\S+ opt/java/bin/java\\n")
                .containsPattern("-rwxr-xr-x \\S+ +\\d+ \\S+ \\S+ lib64/ld-linux-x86-64\\.so\\.2\\n")
                .containsPattern("-rw-r--r-- \\S+ +\\d+ \\S+ \\S+ opt/driver-alias-agent/driver-alias-agent\\.jar\\n")
                .doesNotContain("work/");
    }

    @Test
    @Order(2)
    void ctrImportsItUnderTheNameTheKubeletLooksFor() {
        String images = containerd.run("-n", ContainerdHarness.K8S, "images", "ls", "-q");
        // The DaemonSet's image driver-alias-agent:VERSION is docker.io/library/driver-alias-agent:VERSION to the kubelet.
        assertThat(images.lines()).contains(image);
    }

    /**
     * The README's line, as an operator runs it on a node, against a GPU container no agent has
     * looked at: check names the missing aliases and exits 1; repair creates them, exit 0; check
     * then exits 0.
     */
    @Test
    @Order(3)
    void theReadmesCtrLineChecksAndRepairsAGpuContainer() {
        String id = gpuContainer("ctr-check");
        try {
            assertThat(aliasThere(id)).as("libcuda.so.1 before any repair").isFalse();

            Processes.Result check = ctrLine("check", id);
            assertThat(check.exitCode()).as("check before repair:\n%s", check.output()).isEqualTo(1);
            assertThat(check.output()).contains("missing").contains("libcuda.so.1");

            Processes.Result repair = ctrLine("repair", id);
            assertThat(repair.exitCode()).as("repair:\n%s", repair.output()).isZero();
            assertThat(repair.output()).contains("created").contains("libcuda.so.1");
            assertThat(aliasThere(id)).as("libcuda.so.1 after repair").isTrue();

            Processes.Result again = ctrLine("check", id);
            assertThat(again.exitCode()).as("check after repair:\n%s", again.output()).isZero();
            System.out.printf("[containerd-image] README's ctr line: check 1, repair 0, check 0%n");
        } finally {
            containerd.remove(ContainerdHarness.K8S, id);
        }
    }

    /** The agent from the imported image, as the DaemonSet runs it: ready, and a GPU container started after it is repaired. */
    @Test
    @Order(4)
    void theAgentRunsFromTheImageAsTheDaemonSetRunsItAndRepairs(@TempDir Path logs) throws Exception {
        DaemonSetAgent daemonSet = DaemonSetAgent.load();
        List<String> added = daemonSet.addedCapabilities();
        assertThat(added).containsExactlyInAnyOrder("SYS_PTRACE", "DAC_OVERRIDE", "CHOWN", "FOWNER");
        int port = AgentProcess.freePort();
        String agentId = "daa-agent-" + UUID.randomUUID().toString().substring(0, 8);
        Path agentLog = logs.resolve("agent.log");
        List<String> options = new ArrayList<>(List.of("--with-ns", "pid:" + HOST_PID_NAMESPACE, "--read-only", "--seccomp",
                "--net-host", "--log-uri", "file://" + agentLog));
        for (String cap : DEFAULT_CAPABILITIES) {
            if (!added.contains(cap)) {
                options.addAll(List.of("--cap-drop", "CAP_" + cap));
            }
        }
        for (String cap : added) {
            if (!DEFAULT_CAPABILITIES.contains(cap)) {
                options.addAll(List.of("--cap-add", "CAP_" + cap));
            }
        }
        daemonSet.memoryLimitBytes().ifPresent(bytes -> options.addAll(List.of("--memory-limit", Long.toString(bytes))));
        options.addAll(List.of("--mount", "type=tmpfs,src=tmpfs,dst=/tmp,options=rw:exec:size=33554432"));
        // The node's /run at /host/run, read-only, HostToContainer: containerd's directory where the manifest looks.
        Path harness = Path.of(containerd.socket()).getParent();
        options.addAll(List.of("--mount", "type=bind,src=" + harness + ",dst=/host/run/containerd,options=rbind:ro:rslave"));
        // The node's /var/lib at the same path: containerd's root (its snapshots) where containerd reports it.
        options.addAll(List.of("--mount", "type=bind,src=" + containerd.rootDir() + ",dst=" + containerd.rootDir()
                + ",options=rbind:rw:rslave"));
        for (String dir : TestImages.hostLibraryDirectories()) {
            options.addAll(List.of("--mount", "type=bind,src=" + dir + ",dst=" + dir + ",options=rbind:ro"));
        }
        for (String name : List.of("DRIVER_ALIAS_DOCKER_HOST", "DRIVER_ALIAS_CONTAINERD_ADDRESS", "DRIVER_ALIAS_LOG_FORMAT")) {
            options.addAll(List.of("--env", name + "=" + daemonSet.environmentValue(name).orElseThrow()));
        }
        options.addAll(List.of("--env", "DRIVER_ALIAS_CONTAINERD_STATE=" + daemonSet.environmentValue("DRIVER_ALIAS_CONTAINERD_STATE")
                .orElseThrow() + "/state", "--env", "DRIVER_ALIAS_KUBERNETES=off", "--env", "NODE_NAME=test-node",
                "--env", "DRIVER_ALIAS_LISTEN=127.0.0.1:" + port, "--env", "DRIVER_ALIAS_RESYNC_INTERVAL=5s",
                "--env", "DRIVER_ALIAS_HOST_LIB_DIR=" + String.join(",", TestImages.hostLibraryDirectories())));
        // ctr's command replaces the image's entry point as well: the entry point, then the manifest's args.
        List<String> args = new ArrayList<>(ENTRYPOINT);
        args.addAll(daemonSet.args());
        assertThat(daemonSet.environmentValue("DRIVER_ALIAS_CONTAINERD_ADDRESS")).hasValue(
                "unix:///host/run/containerd/containerd.sock");
        containerd.ctrRun(ContainerdHarness.K8S, options, image, agentId, args.toArray(String[]::new));
        String gpu = null;
        try (HttpClient http = HttpClient.newHttpClient()) {
            AgentProcess.awaitTrue("the agent from the image to be ready", Duration.ofSeconds(90),
                    () -> status(http, port, "/readyz") == 200);
            // Exactly the manifest's capabilities, in the effective set of the agent's process.
            long capEff = capabilities(containerd.taskPid(ContainerdHarness.K8S, agentId));
            assertThat(capEff).as("CapEff of the agent").isEqualTo(bits(Set.copyOf(added)));
            String metrics = body(http, port, "/metrics");
            assertThat(metrics).contains("driver_alias_runtime_up{runtime=\"containerd\"} 1")
                    .doesNotContain("driver_alias_docker_up").doesNotContain("docker_error");

            gpu = gpuContainer("image-agent");
            String id = gpu;
            AgentProcess.awaitTrue("the GPU container's libcuda.so.1", Duration.ofSeconds(60), () -> aliasThere(id));
            AgentProcess.awaitTrue("the repair in the agent's log", Duration.ofSeconds(30),
                    () -> read(agentLog).contains(id.substring(0, 12)) && read(agentLog).contains("repaired"));
            assertThat(read(agentLog).lines().filter(l -> !l.isBlank()))
                    .as("one JSON object per line").allMatch(l -> l.startsWith("{") && l.endsWith("}"));
            assertThat(read(agentLog)).doesNotContain("\"log.level\":\"ERROR\"");
            System.out.printf("[containerd-image] the agent from %s, with %s only, read-only: ready, GPU container repaired%n",
                    image, added);
        } finally {
            if (gpu != null) {
                containerd.remove(ContainerdHarness.K8S, gpu);
            }
            containerd.remove(ContainerdHarness.K8S, agentId);
        }
    }

    /** A running container of the Debian image with the real driver's files bound, as a GPU runtime would. */
    private static String gpuContainer(String name) {
        String id = name + "-" + UUID.randomUUID().toString().substring(0, 8);
        return containerd.ctrRun(ContainerdHarness.K8S, CriProbes.ctrBinds(), containerd.debianImage(ContainerdHarness.K8S), id,
                "sleep", "600");
    }

    private static boolean aliasThere(String id) {
        return containerd.exec(ContainerdHarness.K8S, id, "test", "-L", LIB_DIR + "/libcuda.so.1").exitCode() == 0;
    }

    /**
     * The README's {@code ctr} line with {@code command} and a container id, against the harness'
     * containerd (its socket for ctr and for the mount, its runc root) and with the test drivers'
     * directories: otherwise word for word.
     */
    private static Processes.Result ctrLine(String command, String id) {
        Matcher block = CTR_LINE.matcher(RepoFiles.read("README.md"));
        assertThat(block.find()).as("README.md has a <!-- ctr check line --> block").isTrue();
        String line = block.group(1).trim();
        Matcher runbook = CTR_LINE.matcher(RepoFiles.read("docs/runbook.md"));
        assertThat(runbook.find()).isTrue();
        assertThat(runbook.group(1).trim()).as("the runbook's line").isEqualTo(line + " <container-id>");
        String image = "docker.io/library/" + AgentArchive.name();
        assertThat(line).endsWith(" " + image + " driver-alias-check " + String.join(" ", ENTRYPOINT) + " check");
        List<String> words = new ArrayList<>(List.of(line.split(" +")));
        assertThat(words.subList(0, 4)).containsExactly("ctr", "-n", "k8s.io", "run");
        List<String> cmd = new ArrayList<>(List.of("ctr", "-a", containerd.socket()));
        cmd.addAll(words.subList(1, 4));
        cmd.addAll(List.of("--runc-root", containerd.runcRoot().toString()));
        for (String dir : TestImages.hostLibraryDirectories()) {
            cmd.addAll(List.of("--mount", "type=bind,src=" + dir + ",dst=" + dir + ",options=rbind:ro"));
        }
        int at = words.indexOf(image);
        for (String word : words.subList(4, at + 1)) {
            cmd.add(word.replace("src=/run/containerd/containerd.sock,", "src=" + containerd.socket() + ",")
                    .replace("pid:/proc/1/ns/pid", "pid:" + HOST_PID_NAMESPACE));
        }
        // The container's own id, unique per run; then the line's command with this one in place of check.
        cmd.add("driver-alias-check-" + UUID.randomUUID().toString().substring(0, 8));
        cmd.addAll(words.subList(at + 2, words.size() - 1));
        cmd.add(command);
        cmd.addAll(TestImages.hostLibraryArguments());
        cmd.add(id);
        return Processes.run(cmd, 120);
    }

    private static long capabilities(int pid) throws IOException {
        String status = Files.readString(Path.of("/proc", Integer.toString(pid), "status"));
        Matcher m = Pattern.compile("(?m)^CapEff:\\s*([0-9a-f]+)$").matcher(status);
        assertThat(m.find()).isTrue();
        return Long.parseUnsignedLong(m.group(1), 16);
    }

    /** The capability bits of {@code names} (linux/capability.h). */
    private static long bits(Set<String> names) {
        long bits = 0;
        for (String name : names) {
            int bit = switch (name) {
                case "CHOWN" -> 0;
                case "DAC_OVERRIDE" -> 1;
                case "FOWNER" -> 3;
                case "SYS_PTRACE" -> 19;
                default -> throw new AssertionError("no bit for " + name);
            };
            bits |= 1L << bit;
        }
        return bits;
    }

    private static int status(HttpClient http, int port, String path) {
        try {
            return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).timeout(Duration.ofSeconds(3))
                    .build(), HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (IOException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    private static String body(HttpClient http, int port, String path) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).timeout(Duration.ofSeconds(5))
                .build(), HttpResponse.BodyHandlers.ofString()).body();
    }

    private static String read(Path file) {
        try {
            return Files.isRegularFile(file) ? Files.readString(file) : "";
        } catch (IOException e) {
            return "";
        }
    }
}
