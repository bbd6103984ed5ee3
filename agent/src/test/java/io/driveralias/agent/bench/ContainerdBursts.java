package io.driveralias.agent.bench;

import io.driveralias.agent.testing.ContainerdHarness;
import io.driveralias.agent.testing.ContainerdVersion;
import io.driveralias.agent.testing.CpuHog;
import io.driveralias.agent.testing.PodCgroup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Bursts of GPU pods on containerd ({@code -Dbench.containerdBursts=true}): {@code bursts} bursts of
 * {@code size} pods at once (RunPodSandbox, CreateContainer and StartContainer each, in parallel,
 * as a kubelet given many pods at once), beside a busy loop on each core, on the event path
 * ({@code eventsRelease}, containerd 1.6 by default: no NRI there) and through NRI
 * ({@code nriRelease}, 2.1). The packaged agent starts anew for each and serves {@code warmup}
 * pods one after another first, unmeasured. Each container's probe says whether its aliases were
 * there at its first instruction, or how long after it they came; the agent's log of each path is
 * kept beside the report ({@code target/benchmark/bursts-*-agent.log}).
 */
final class ContainerdBursts {

    /** {@code weights}: where the agent and the busy loops run ({@link PodWeights}). */
    record Settings(ContainerdVersion eventsRelease, ContainerdVersion nriRelease, int bursts, int size, int warmup, int hogNice,
                    int probeTimeoutSeconds, PodWeights weights) {
        static Settings fromSystemProperties() {
            return new Settings(ContainerdVersion.valueOf(System.getProperty("bench.containerdBursts.eventsRelease", "V1_6")),
                    ContainerdVersion.valueOf(System.getProperty("bench.containerdBursts.nriRelease", "V2_1")),
                    Integer.getInteger("bench.containerdBursts.bursts", 5), Integer.getInteger("bench.burst", 20),
                    Integer.getInteger("bench.containerdBursts.warmup", 20), Integer.getInteger("bench.hogNice", 0),
                    Integer.getInteger("bench.probeTimeoutSeconds", 15), PodWeights.fromSystemProperties());
        }

        /** The busy loops and where the agent runs, as the report names them. */
        String load() {
            return (hogNice >= 0 ? "beside " + weights.describeLoops(hogNice) : "no load beside") + "; " + weights.agentPlace();
        }
    }

    /**
     * One path's bursts: its containers at their first instruction, the exposure of the others (ms),
     * those never repaired within the probe's time, the CRI StartContainer calls' durations (ms) and
     * the agent's CPU over the bursts.
     */
    record Bursts(String name, String version, int present, int total, Stats exposure, int missed, Stats criStartMs, double cpuSeconds,
                String loadBefore, String loadAfter) {
        double percent() {
            return 100.0 * present / Math.max(1, total);
        }
    }

    record Result(Settings settings, List<Bursts> paths) {
    }

    private ContainerdBursts() {
    }

    static Result run(Settings settings, List<String> jvmOptions) throws Exception {
        List<Bursts> paths = new ArrayList<>();
        ContainerdHarness events = ContainerdHarness.of(settings.eventsRelease());
        paths.add(path("event path", events, List.of("--runtime", "containerd", "--containerd-address", events.address(),
                "--containerd-state", events.stateDir().toString()), false, settings, jvmOptions));
        ContainerdHarness nri = ContainerdHarness.of(settings.nriRelease());
        paths.add(path("NRI", nri, NriStartTimes.nriOptions(nri), true, settings, jvmOptions));
        return new Result(settings, paths);
    }

    private static Bursts path(String name, ContainerdHarness containerd, List<String> options, boolean nri, Settings settings,
                             List<String> jvmOptions) throws Exception {
        ContainerdWorkload workload = new ContainerdWorkload(containerd, Workload.benchDir(), settings.probeTimeoutSeconds());
        try (AgentSubject agent = new AgentSubject(jvmOptions, "agent, " + name, options);
             PodCgroup pod = settings.weights().agentPod("daa-bench-agent-" + ProcessHandle.current().pid())) {
            agent.start();
            if (pod != null) {
                pod.add(agent.pid());
            }
            if (nri) {
                agent.awaitMetric("driver_alias_runtime_up{runtime=\"nri\"}", 1.0, Duration.ofSeconds(60));
            }
            List<ContainerdWorkload.Started> warm = new ArrayList<>();
            for (int i = 0; i < settings.warmup(); i++) {
                warm.add(workload.timedPod(true, settings.probeTimeoutSeconds()).started());
            }
            workload.probes(warm);
            workload.remove(warm);
            String loadBefore = RepairBenchmark.loadAverage();
            double cpuFrom = agent.cpuSeconds();
            List<ContainerdWorkload.TimedStart> starts;
            try (CpuHog hog = settings.weights().loops(settings.hogNice())) {
                starts = workload.criBursts(settings.bursts() * settings.size(), settings.size());
            }
            List<ContainerdWorkload.Started> started = starts.stream().map(ContainerdWorkload.TimedStart::started).toList();
            Map<String, Workload.Probe> probes = workload.probes(started);
            double cpu = agent.cpuSeconds() - cpuFrom;
            String loadAfter = RepairBenchmark.loadAverage();
            // What the agent said of each container (its late ones' causes), beside the report.
            Path logs = Files.createDirectories(Path.of("target", "benchmark"));
            Files.writeString(logs.resolve("bursts-" + name.replaceAll("[^A-Za-z0-9]+", "-") + "-agent.log"), agent.log());
            workload.remove(started);
            int present = (int) probes.values().stream().filter(Workload.Probe::presentAtStart).count();
            int missed = (int) probes.values().stream().filter(Workload.Probe::missed).count();
            Stats exposure = Stats.of(probes.values().stream().filter(p -> !p.presentAtStart() && !p.missed())
                    .map(Workload.Probe::exposureMs).toList());
            return new Bursts(name, containerd.version(), present, probes.size(), exposure, missed,
                    Stats.of(starts.stream().map(ContainerdWorkload.TimedStart::millis).toList()), cpu, loadBefore, loadAfter);
        }
    }
}
