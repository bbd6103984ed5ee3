package io.driveralias.agent.it;

import static io.driveralias.agent.testing.TestImages.DEBIAN_LIB;
import static io.driveralias.agent.testing.TestImages.VERSION;
import static org.assertj.core.api.Assertions.assertThat;

import at.favre.lib.crypto.bcrypt.BCrypt;
import io.driveralias.agent.http.PortFlood;
import io.driveralias.agent.http.PortProbes;
import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.DockerRelease;
import io.driveralias.agent.testing.PodCgroup;
import io.driveralias.agent.testing.ShippedJvm;
import io.driveralias.agent.testing.TestCertificates;
import io.driveralias.agent.testing.TestImages;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * Issue 23, on the packaged agent with the JVM options it ships (a 32 MiB heap), basic auth on
 * its metrics port (over plain HTTP, then over TLS) and a private dockerd: 16 addresses x 64
 * connections flood the port with wrong passwords (over TLS: full handshakes, or handshakes that
 * never finish), from a JVM of their own ({@link PortFlood}). Meanwhile the kubelet's probes
 * (once a second each, its shortest period) are answered, 30 of 30 each within a second,
 * Prometheus' 12 scrapes succeed, a login the agent has not seen before gets in, and GPU
 * containers started during the flood have their aliases at their first instruction, every one
 * of them. The agent's CPU during the flood is reported. The agent and the flood each run in a
 * CPU cgroup of their own ({@link PodCgroup}), as the agent's pod and the attacker's do: the port
 * serves at nice 10, which weighs only within the agent's cgroup, so without them whatever else
 * loads the test machine at nice 0 (six busy loops: probes up to 1.6 s) outweighs the port as no
 * other pod can.
 * The dockerd is Docker 28.5 with its containerd, where the agent dates a container's process
 * and writes before its first instruction (docs/platforms.md); on Docker 20.10 without it about
 * 1 in 70 {@code docker run}s beat the agent with no flood at all (DockerReleasesIT), and one of
 * this test's 18 did so in CI: that gap, not the flood, would be measured there. (The same
 * floods against the server alone, in-process, were dropped from the unit tests: this test asserts
 * all they did on the agent as it ships.) For the same reason the class runs alone ({@code @Isolated}):
 * beside another IT class (the ITs run two at a time), 1 of 30 probes took 1.23 s.
 */
@Isolated
@Timeout(600)
class AuthFloodIT {

    private static final int ADDRESSES = 16;
    private static final int PER_ADDRESS = 64;
    private static final int GPU_CONTAINERS = 6;
    private static final String KUBELET = "127.0.0.100";
    private static final String PROMETHEUS = "127.0.0.200";

    @TempDir
    static Path dir;
    static DockerHarness docker;
    static GpuContainers containers;
    static String image;
    static TestCertificates certs;
    static String users;
    private AgentProcess agent;
    /** The agent's pod, as the DaemonSet's: its port's nice weighs only against its own threads there. */
    private PodCgroup agentPod;

    @BeforeAll
    static void setUp() {
        docker = DockerHarness.start(DockerRelease.DEBIAN_SID, false);
        containers = new GpuContainers(docker);
        image = TestImages.imageOn(docker, "debian-layout", DEBIAN_LIB, root -> { });
        certs = TestCertificates.create(dir);
        users = "basic_auth_users: {prometheus: '" + BCrypt.with(BCrypt.Version.VERSION_2Y).hashToString(10, "s3cret".toCharArray())
                + "', grafana: '" + BCrypt.with(BCrypt.Version.VERSION_2Y).hashToString(10, "gr4fana".toCharArray()) + "'}\n";
    }

    @AfterAll
    static void tearDown() {
        if (containers != null) {
            containers.close();
        }
        if (docker != null) {
            docker.close();
        }
    }

    @AfterEach
    void stopAgent() {
        if (agent != null) {
            agent.close();
        }
        if (agentPod != null) {
            agentPod.close();
        }
    }

    @Test
    void wrongPasswordsOverPlainHttp() throws Exception {
        start(users);
        floodAndProbe(PortFlood.Kind.WRONG_PASSWORDS, null);
    }

    @Test
    void fullTlsHandshakesWithWrongPasswords() throws Exception {
        start("tls_server_config: {cert_file: server.crt, key_file: server.key}\n" + users);
        floodAndProbe(PortFlood.Kind.TLS_WRONG_PASSWORDS, certs.clientContext(null));
    }

    @Test
    void tlsHandshakesThatNeverFinish() throws Exception {
        start("tls_server_config: {cert_file: server.crt, key_file: server.key}\n" + users);
        floodAndProbe(PortFlood.Kind.TLS_STALLED_HANDSHAKES, certs.clientContext(null));
    }

    private void floodAndProbe(PortFlood.Kind kind, SSLContext tls) throws Exception {
        PortProbes clients = new PortProbes(agent.port(), tls);
        String prometheus = TestCertificates.basic("prometheus", "s3cret");
        assertThat(new PortProbes(agent.port(), tls).get(PROMETHEUS, "/metrics", prometheus, 10_000).status())
                .as("Prometheus logs in before the flood").isEqualTo(200);
        List<String> gpu = Collections.synchronizedList(new ArrayList<>());
        // The attacker is a pod of its own too.
        PodCgroup attackerPod = PodCgroup.create("daa-auth-flood-attacker-" + agent.pid());
        PortFlood.Launched flood;
        try {
            flood = PortFlood.launch(agent.port(), kind, ADDRESSES, PER_ADDRESS, attackerPod::add);
        } catch (IOException | RuntimeException e) {
            attackerPod.close();
            throw e;
        }
        long cpuBefore = cpuTicks(agent.pid());
        long floodStart = System.nanoTime();
        Thread starter;
        PortProbes.Answer newLogin;
        try (flood) {
            // GPU containers started while the flood lasts, one every few seconds, as a node's pods come and go.
            starter = Thread.ofPlatform().start(() -> {
                for (int i = 0; i < GPU_CONTAINERS; i++) {
                    gpu.add(containers.run(image, DEBIAN_LIB, List.of("sh", "-c",
                            "readlink " + DEBIAN_LIB + "/libnvidia-ml.so.1 || echo MISSING; nvidia-smi; sleep 600")));
                    try {
                        Thread.sleep(2000);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
            for (int i = 0; i < 30; i++) {
                long round = System.nanoTime();
                clients.get(KUBELET, "/healthz", null, 5000);
                clients.get(KUBELET, "/readyz", null, 5000);
                if (i % 5 == 0 || i % 5 == 2) {
                    clients.get(PROMETHEUS, "/metrics", prometheus, 10_000);
                }
                Thread.sleep(Math.max(0, 1000 - (System.nanoTime() - round) / 1_000_000)); // the kubelet's shortest period
            }
            // Prometheus' scrape timeout: a login the agent has not seen gets its bcrypt turn in time.
            newLogin = new PortProbes(agent.port(), tls).get("127.0.0.201", "/metrics", TestCertificates.basic("grafana", "gr4fana"), 10_000);
            starter.join(120_000);
        } finally {
            attackerPod.close();
        }
        double cpu = Math.max(0, cpuTicks(agent.pid()) - cpuBefore) * 10.0 / ((System.nanoTime() - floodStart) / 1e6) * 100;
        List<String> missing = new ArrayList<>();
        for (String id : gpu) {
            AgentProcess.awaitTrue("the first output of " + id, Duration.ofSeconds(30),
                    () -> docker.run("logs", id).contains("NVML") || docker.run("logs", id).contains("MISSING"));
            String first = docker.run("logs", id);
            if (!first.contains("libnvidia-ml.so." + VERSION) || first.contains("MISSING")) {
                missing.add(id.substring(0, 12) + ": " + agent.logLines(id.substring(0, 12)));
            }
        }
        System.out.printf("the packaged agent (shipped JVM options), %s flood, %d addresses x %d connections, how they ended: %s%n"
                + "  the agent's CPU meanwhile: %.0f %% of a core; load average %s; the agent and the flood each in a CPU cgroup"
                + " of its own, as pods are (%s, %s)%n"
                + "  %s%n  %s%n  %s%n  a new login during the flood: %d in %.1f ms%n"
                + "  GPU containers started during the flood: %d of %d with their aliases at the first instruction%n",
                kind, ADDRESSES, PER_ADDRESS, flood.outcomes(), cpu, Files.readString(Path.of("/proc/loadavg")).trim(), agentPod, attackerPod,
                clients.summary("/healthz"), clients.summary("/readyz"), clients.summary("/metrics"), newLogin.status(),
                newLogin.millis(), gpu.size() - missing.size(),
                gpu.size());

        assertThat(agent.isAlive()).as("the agent still runs; its log ends:%n%s", tail(agent.log())).isTrue();
        assertThat(agent.log()).doesNotContain("OutOfMemoryError");
        for (String probe : new String[] {"/healthz", "/readyz"}) {
            assertThat(clients.answers(probe)).as(clients.summary(probe)).hasSize(30).allSatisfy(a -> {
                assertThat(a.status()).isEqualTo(200);
                assertThat(Duration.ofNanos(a.nanos())).isLessThan(Duration.ofSeconds(1));
            });
        }
        assertThat(clients.answers("/metrics")).as(clients.summary("/metrics")).hasSize(12)
                .allSatisfy(a -> assertThat(a.status()).isEqualTo(200));
        assertThat(newLogin.status()).as("a first login during the flood").isEqualTo(200);
        assertThat(gpu).hasSize(GPU_CONTAINERS);
        assertThat(missing).as("GPU containers without their aliases at the first instruction").isEmpty();
    }

    private static String tail(String log) {
        return log.substring(Math.max(0, log.length() - 2000));
    }

    /** User and system CPU of {@code pid} so far, in clock ticks (1/100 s); 0 once it is gone. */
    private static long cpuTicks(long pid) throws IOException {
        Path file = Path.of("/proc/" + pid + "/stat");
        if (!Files.exists(file)) {
            return 0;
        }
        String stat = Files.readString(file);
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
    }

    /** The agent as the DaemonSet runs it, with the JVM options it ships and the web configuration {@code yaml}. */
    private void start(String yaml) throws IOException {
        Path config = Files.writeString(dir.resolve("web-" + System.nanoTime() + ".yml"), yaml);
        int port = AgentProcess.freePort();
        List<String> cmd = new ArrayList<>(List.of(AgentProcess.java()));
        cmd.addAll(ShippedJvm.commandLineOptions());
        cmd.addAll(List.of("-jar", AgentProcess.jar().toString(), "run", "--listen", "127.0.0.1:" + port,
                "--docker-host", docker.host(), "--kubernetes", "off", "--ldconfig", "off", "--web-config-file", config.toString()));
        cmd.addAll(TestImages.hostLibraryArguments());
        agent = AgentProcess.start(cmd, port);
        agentPod = PodCgroup.create("daa-auth-flood-agent-" + agent.pid()).add(agent.pid());
        agent.awaitLog("first reconcile", Duration.ofSeconds(60));
    }
}
