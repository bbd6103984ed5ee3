package io.driveralias.agent.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.BusyNode;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.DockerRelease;
import io.driveralias.agent.testing.RealDriver;
import io.driveralias.agent.testing.ShippedJvm;
import io.driveralias.agent.testing.TestImages;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The Docker ITs' core cases on each Docker this project runs side by side: Debian 12's 20.10,
 * Debian 13's 26.1 and sid's 28.5, each with overlay2 and (26.1, 28.5: 20.10 has none) with
 * containerd's image store, Docker 29's default storage. On each, on a {@link BusyNode} (a busy loop
 * on every core in a 1-CPU pod, the agent weighted as the DaemonSet's CPU request):
 * {@code docker run} and create-then-start (300 ms apart) with the driver's files declared as binds,
 * {@code docker run} with the files added by the container's runtime (a test runtime that plays the
 * NVIDIA runtime), and {@code docker run} after dockerd restarted under the agent. Each container's
 * first instructions look for the driver ({@link RealContainers#FIRST_INSTRUCTIONS}): at least 99 % of
 * each row's containers must find it (on 20.10 printed, not asserted: a measured gap, see the test),
 * and the agent must never say "before start" of one that did
 * not (a container it does not claim though it found its aliases is counted "unproven", see
 * {@link Tally}). The agent runs with
 * the JVM options it ships and finds Docker's containerd itself ({@code auto}). Prints the table.
 */
@Timeout(900)
class DockerReleasesIT {

    static final int RUNS = Integer.getInteger("it.dockerReleases.runs", 12);
    static final int CREATES = Integer.getInteger("it.dockerReleases.creates", 6);
    static final int RUNTIME_RUNS = Integer.getInteger("it.dockerReleases.runtimeRuns", 4);
    static final int AFTER_RESTART = Integer.getInteger("it.dockerReleases.afterRestart", 3);
    /** {@code off} measures the agent without Docker's containerd (its assertions then fail where that matters). */
    static final String CONTAINERD = System.getProperty("it.dockerReleases.containerd", "auto");

    /** One engine: a release and its storage. */
    record Row(DockerRelease release, boolean imageStore) {
        @Override
        public String toString() {
            return release.version() + ", " + (imageStore ? "containerd image store" : "overlay2");
        }
    }

    /**
     * What one case of one row came to: containers, those whose aliases were there when their first
     * instructions looked, the agent's false claims ("before start" of a container that did not see
     * them) and its unproven ones (no "before start" for a container that saw them: its aliases were
     * written after runc made its process and verified only once its program had begun, which proves
     * nothing of its first instruction, though the probe a few ms into the program found them).
     */
    record Tally(int containers, int atFirstInstruction, int falseClaims, int unproven) {
        static final Tally NONE = new Tally(0, 0, 0, 0);

        Tally plus(boolean atFirst, boolean saidBeforeStart) {
            return new Tally(containers + 1, atFirstInstruction + (atFirst ? 1 : 0), falseClaims + (saidBeforeStart && !atFirst ? 1 : 0),
                    unproven + (atFirst && !saidBeforeStart ? 1 : 0));
        }

        @Override
        public String toString() {
            return atFirstInstruction + "/" + containers + (falseClaims > 0 ? " (" + falseClaims + " claimed falsely)" : "")
                    + (unproven > 0 ? " (" + unproven + " unproven)" : "");
        }
    }

    private static final Map<Row, Map<String, Tally>> RESULTS = new LinkedHashMap<>();
    private static final Map<Row, Long> SECONDS = new LinkedHashMap<>();

    /** Every row, or those whose name contains {@code -Dit.dockerReleases.only} (e.g. "28.5, containerd"). */
    static Stream<Row> rows() {
        String only = System.getProperty("it.dockerReleases.only", "");
        return Stream.of(new Row(DockerRelease.DEBIAN_12, false), new Row(DockerRelease.DEBIAN_13, false),
                new Row(DockerRelease.DEBIAN_13, true), new Row(DockerRelease.DEBIAN_SID, false),
                new Row(DockerRelease.DEBIAN_SID, true)).filter(r -> r.toString().contains(only));
    }

    @ParameterizedTest(name = "Docker {0}")
    @MethodSource("rows")
    void aGpuContainersAliasesAreThereAtItsFirstInstruction(Row row, @TempDir Path tmp) {
        long begun = System.nanoTime();
        Map<String, Tally> tallies = new LinkedHashMap<>();
        try (DockerHarness docker = GpuRuntimeDocker.start(tmp, row.release(), row.imageStore())) {
            assertThat(docker.run("info", "--format", "{{.Driver}} {{json .DriverStatus}}"))
                    .as("the storage asked for").contains(row.imageStore() ? "io.containerd.snapshotter.v1" : "overlay2");
            try (AgentProcess agent = startAgent(docker)) {
                agent.awaitLog("first reconcile", Duration.ofSeconds(60));
                if (CONTAINERD.equals("auto")) {
                    agent.awaitLog("reading Docker's containerd at ", Duration.ofSeconds(30));
                }
                try (RealContainers containers = new RealContainers(docker)) {
                    // The runtime's files, shown once by a running container, as on a node that ran GPU jobs before.
                    String first = containers.startWithoutMounts("--runtime", "gpu", "--env", "NVIDIA_VISIBLE_DEVICES=all");
                    containers.awaitWorking(first);
                    Map<String, List<String>> probes = new LinkedHashMap<>();
                    String[] declared = RealDriver.mounts(RealContainers.LIB_DIR).toArray(String[]::new);
                    try (BusyNode busy = BusyNode.around(agent.pid())) {
                        for (int i = 0; i < RUNS; i++) {
                            probes.computeIfAbsent("docker run", k -> new ArrayList<>()).add(containers.startProbing("run", declared));
                        }
                        for (int i = 0; i < CREATES; i++) {
                            String id = containers.startProbing("create", declared);
                            pause(Duration.ofMillis(300));
                            docker.run("start", id);
                            probes.computeIfAbsent("create, start", k -> new ArrayList<>()).add(id);
                        }
                        for (int i = 0; i < RUNTIME_RUNS; i++) {
                            probes.computeIfAbsent("runtime's files", k -> new ArrayList<>()).add(containers.startProbing("run",
                                    "--runtime", "gpu", "--env", "NVIDIA_VISIBLE_DEVICES=all"));
                        }
                        probes.forEach((kind, ids) -> tallies.put(kind, judge(containers, agent, ids)));
                    }
                }
                // dockerd restarted under the agent (its containers go with it: no live restore).
                docker.stopDaemon();
                docker.startDaemon();
                agent.await("a second connection", Duration.ofSeconds(60),
                        () -> agent.logLines("watching Docker events").size() >= 2);
                try (RealContainers containers = new RealContainers(docker);
                     BusyNode busy = BusyNode.around(agent.pid())) {
                    String[] declared = RealDriver.mounts(RealContainers.LIB_DIR).toArray(String[]::new);
                    List<String> ids = new ArrayList<>();
                    for (int i = 0; i < AFTER_RESTART; i++) {
                        ids.add(containers.startProbing("run", declared));
                    }
                    tallies.put("after a restart", judge(containers, agent, ids));
                }
                assertThat(agent.logLines(" is not repaired")).as("nothing left unrepaired").isEmpty();
                assertThat(agent.logLines("ERROR")).isEmpty();
            }
        } finally {
            RESULTS.put(row, tallies);
            SECONDS.put(row, (System.nanoTime() - begun) / 1_000_000_000);
        }
        int total = tallies.values().stream().mapToInt(Tally::containers).sum();
        int atFirst = tallies.values().stream().mapToInt(Tally::atFirstInstruction).sum();
        int falseClaims = tallies.values().stream().mapToInt(Tally::falseClaims).sum();
        if (row.release() == DockerRelease.DEBIAN_12) {
            // Docker 20.10 (Debian 12's): measured, not asserted. Beside the busy loops it had 144 of 146
            // over five runs, a run of 25 failing 99 % with one late container in 2 of 5 (docs/platforms.md,
            // Docker releases): a known gap on an engine out of support, printed here, never a red CI by
            // chance. Nothing left unrepaired and no false "before start" are asserted on it as on all.
            System.out.printf("[docker-releases] Docker %s: %d of %d at the first instruction (target 99 %%, not"
                    + " asserted on 20.10: a known gap)%n", row, atFirst, total);
        } else {
            assertThat(atFirst).as("aliases at the first instruction on Docker %s: %s", row, tallies)
                    .isGreaterThanOrEqualTo((int) Math.ceil(0.99 * total));
        }
        assertThat(falseClaims).as("'before start' said of a container that did not see its aliases: %s", tallies).isZero();
    }

    /**
     * Whether each container found the driver, the aliases and the loader cache at its first
     * instructions, and whether the agent said "before start" exactly for those.
     */
    private static Tally judge(RealContainers containers, AgentProcess agent, List<String> ids) {
        Tally tally = Tally.NONE;
        for (String id : ids) {
            String seen = containers.firstInstructions(id);
            boolean atFirst = seen.contains("cache=yes") && seen.contains("cuInit 100")
                    && !seen.contains("nvidia-smi=" + RealContainers.NVML_NOT_FOUND);
            String shortId = id.substring(0, 12);
            agent.awaitLog("repaired container " + shortId, Duration.ofSeconds(30));
            boolean said = agent.logLines("repaired container " + shortId + " (").stream()
                    .anyMatch(l -> l.contains(") before start: "));
            if (!atFirst || atFirst != said) {
                List<String> lines = agent.logLines(shortId);
                System.out.printf("[docker-releases] %s: the container saw %s; the agent said %s%n", shortId,
                        seen.replace('\n', ' '), lines.subList(0, Math.min(lines.size(), 8)));
            }
            tally = tally.plus(atFirst, said);
        }
        return tally;
    }

    private static void pause(Duration d) {
        try {
            Thread.sleep(d);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** The packaged agent with the JVM options it ships (a 32 MiB heap), as the DaemonSet runs it. */
    private static AgentProcess startAgent(DockerHarness docker) {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        List<String> cmd = new ArrayList<>(List.of(AgentProcess.java()));
        cmd.addAll(ShippedJvm.commandLineOptions());
        cmd.addAll(List.of("-jar", AgentProcess.jar().toString(), "run", "--listen", "127.0.0.1:" + port, "--resync-interval",
                "5s", "--docker-host", docker.host(), "--ldconfig", "cache", "--gpu-runtime", "gpu",
                "--docker-containerd-address", CONTAINERD));
        cmd.addAll(TestImages.hostLibraryArguments());
        return AgentProcess.start(cmd, port);
    }

    @AfterAll
    static void table() {
        StringBuilder out = new StringBuilder("[docker-releases] aliases at the first instruction, beside "
                + BusyNode.describeShipped() + ", Docker's containerd " + CONTAINERD + "\n");
        out.append(String.format("| %-34s | %-14s | %-14s | %-15s | %-15s | %-7s |%n", "Docker, storage", "docker run",
                "create, start", "runtime's files", "after a restart", "seconds"));
        RESULTS.forEach((row, tallies) -> out.append(String.format("| %-34s | %-14s | %-14s | %-15s | %-15s | %7d |%n", row,
                tallies.getOrDefault("docker run", Tally.NONE), tallies.getOrDefault("create, start", Tally.NONE),
                tallies.getOrDefault("runtime's files", Tally.NONE),
                tallies.getOrDefault("after a restart", Tally.NONE), SECONDS.get(row))));
        if (!RESULTS.isEmpty()) {
            out.append("| 20.10, containerd image store      | (none: Docker has it from 24 on)").append('\n');
        }
        System.out.print(out);
    }
}
