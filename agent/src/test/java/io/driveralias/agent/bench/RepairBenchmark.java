package io.driveralias.agent.bench;

import io.driveralias.agent.testing.ContainerdHarness;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.SharedEngines;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * The benchmark: {@code mvn -B verify -Pbenchmark} (see docs/benchmark.md). Not part of the normal
 * test run; {@code BenchmarkSmokeIT} runs a small version of it there. It prints its figures
 * and writes them to {@code agent/target/benchmark/report.txt}; it asserts nothing about
 * speed. Settings: -Dbench.warmup=400 -Dbench.containers=200 -Dbench.burst=20 -Dbench.hogNice=0 (-1: no CPU hog
 * beside the bursts) -Dbench.createThenStart=50 -Dbench.acrossRestart=20 -Dbench.readyLaunches=5
 * -Dbench.shellLoop=true -Dbench.floorLoop=true -Dbench.startPathOnly=true -Dbench.agentJvm="..." (JVM options, by
 * default those of the DaemonSet) -Dbench.agentJvmExtra="..." (added to them). The phases beside Docker's:
 * -Dbench.docker=false leaves Docker's subjects out; -Dbench.containerd=true adds the containerd event path
 * ({@link ContainerdBenchmark}); -Dbench.nri=true what the agent adds to a pod's start as containerd's NRI plugin
 * ({@link NriStartTimes}, -Dbench.nri.startTimes=false leaves it out) and its CPU and RSS watching Docker,
 * containerd and NRI ({@link NriFootprint}, -Dbench.nri.footprint=false leaves it out); -Dbench.containerdBursts=true bursts of pods on containerd's
 * event path and through NRI ({@link ContainerdBursts}). Their settings are in those classes.
 * It holds both shared engines' locks as any IT that uses them must ({@link SharedEngines}
 * fails a class that does not, after it ran).
 */
@ResourceLock(SharedEngines.DOCKER)
@ResourceLock(SharedEngines.CONTAINERD)
public class RepairBenchmark {

    @Test
    void benchmark() throws Exception {
        List<BenchmarkRun.Result> results = run(BenchmarkRun.Settings.fromSystemProperties(),
                Boolean.parseBoolean(System.getProperty("bench.shellLoop", "true")),
                Boolean.parseBoolean(System.getProperty("bench.floorLoop", "true")));
        if (results.isEmpty() && Boolean.parseBoolean(System.getProperty("bench.docker", "true"))) {
            throw new AssertionError("no results");
        }
    }

    static List<BenchmarkRun.Result> run(BenchmarkRun.Settings settings, boolean withShellLoop, boolean withFloorLoop)
            throws Exception {
        return run(settings, withShellLoop, withFloorLoop, Boolean.parseBoolean(System.getProperty("bench.startPathOnly", "true")));
    }

    static List<BenchmarkRun.Result> run(BenchmarkRun.Settings settings, boolean withShellLoop, boolean withFloorLoop,
                                         boolean withStartPathOnly) throws Exception {
        // bench.agentJvmExtra: more options for a look inside, e.g. -XX:StartFlightRecording=filename=/tmp/agent-%p.jfr
        String jvm = (System.getProperty("bench.agentJvm", daemonSetJvmOptions()) + " "
                + System.getProperty("bench.agentJvmExtra", "")).trim();
        List<String> jvmOptions = Arrays.stream(jvm.trim().split("\\s+")).filter(s -> !s.isEmpty()).toList();
        String report = "agent JVM options: " + jvm + "\n";
        List<BenchmarkRun.Result> results = new ArrayList<>();
        if (Boolean.parseBoolean(System.getProperty("bench.docker", "true"))) {
            String loadBefore = loadAverage();
            List<Long> readyMs = readyOnAnIdleNode(DockerHarness.get(), jvmOptions, settings.readyLaunches());
            results = docker(settings, jvmOptions, withShellLoop, withFloorLoop, withStartPathOnly);
            report += "load average (1, 5, 15 min) before: " + loadBefore + "; after: " + loadAverage() + "\n"
                    + BenchmarkReport.render(settings, results, readyMs);
        }
        if (Boolean.getBoolean("bench.containerd")) {
            report += "\n" + ContainerdBenchmark.render(ContainerdBenchmark.run(ContainerdBenchmark.Settings.fromSystemProperties(),
                    DockerHarness.get(), jvmOptions), results.stream().filter(r -> r.subject().equals("agent")).findFirst());
        }
        if (Boolean.getBoolean("bench.nri")) {
            NriStartTimes.Settings nri = NriStartTimes.Settings.fromSystemProperties();
            if (Boolean.parseBoolean(System.getProperty("bench.nri.startTimes", "true"))) {
                report += "\n" + NriReport.startTimes(NriStartTimes.run(nri, jvmOptions));
            }
            if (Boolean.parseBoolean(System.getProperty("bench.nri.footprint", "true"))) {
                ContainerdHarness containerd = ContainerdHarness.of(nri.release());
                report += "\n" + NriReport.footprint(NriFootprint.run(NriFootprint.Settings.fromSystemProperties(), DockerHarness.get(),
                        containerd, jvmOptions), containerd.version());
            }
        }
        if (Boolean.getBoolean("bench.containerdBursts")) {
            report += "\n" + NriReport.bursts(ContainerdBursts.run(ContainerdBursts.Settings.fromSystemProperties(), jvmOptions));
        }
        System.out.println(report);
        Path out = Path.of("target", "benchmark");
        Files.createDirectories(out);
        Files.writeString(out.resolve("report.txt"), report);
        return results;
    }

    /** The Docker subjects: the agent, the agent on its start path alone, the floor loop, the shell loop. */
    private static List<BenchmarkRun.Result> docker(BenchmarkRun.Settings settings, List<String> jvmOptions, boolean withShellLoop,
                                                    boolean withFloorLoop, boolean withStartPathOnly) throws Exception {
        DockerHarness docker = DockerHarness.get();
        Workload workload = new Workload(docker, Workload.benchDir(), settings.probeTimeoutSeconds());
        BenchmarkRun run = new BenchmarkRun(workload, settings);
        List<BenchmarkRun.Result> results = new ArrayList<>();
        try (AgentSubject agent = new AgentSubject(docker, jvmOptions)) {
            results.add(run.run(agent));
        }
        if (withStartPathOnly) {
            // Where the early path cannot apply (storage without a merged mount, an agent started
            // after the container): the start path alone, against the floor loop.
            try (AgentSubject agent = new AgentSubject(docker, jvmOptions, BenchmarkReport.START_PATH_ONLY,
                    List.of("--before-start=false"))) {
                results.add(run.run(agent));
            }
        }
        if (withFloorLoop) {
            try (FloorLoopSubject floor = new FloorLoopSubject(docker, Workload.benchDir().resolve("FloorLoop.java"))) {
                results.add(run.run(floor));
            }
        }
        if (withShellLoop) {
            try (ShellLoopSubject shell = new ShellLoopSubject(docker, Workload.benchDir().resolve("shell-loop.sh"))) {
                results.add(run.run(shell));
            }
        }
        return results;
    }

    /** The machine's load (a shared machine: the figures' condition). */
    static String loadAverage() {
        try {
            String[] f = Files.readString(Path.of("/proc/loadavg")).split(" ");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }

    /** The agent's time from launch to ready, launched {@code launches} times with nothing else running. */
    private static List<Long> readyOnAnIdleNode(DockerHarness docker, List<String> jvmOptions, int launches) {
        List<Long> ready = new ArrayList<>();
        for (int i = 0; i < launches; i++) {
            try (AgentSubject agent = new AgentSubject(docker, jvmOptions)) {
                ready.add(agent.start());
            }
        }
        return ready;
    }

    /**
     * What the DaemonSet runs: the pod's memory limit (which the JVM would otherwise take from the
     * host) and the image's JVM options, read from agent/image/jvm.options (the argument file its
     * ENTRYPOINT passes) and the limit from k8s/base/040-daemonset.yaml, so that the benchmark
     * measures what is deployed.
     */
    public static String daemonSetJvmOptions() {
        return String.join(" ", io.driveralias.agent.testing.ShippedJvm.commandLineOptions());
    }
}
