package io.driveralias.agent.bench;

import io.driveralias.agent.testing.CpuHog;
import io.driveralias.agent.testing.PodCgroup;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * One subject through the whole workload: warm-up, the measured start path one after another,
 * bursts beside a CPU hog, create-then-start, a Docker restart.
 */
final class BenchmarkRun {

    /**
     * How much work: {@code warmup} containers one after another before anything is measured,
     * the same for every subject; then {@code containers} measured one after another, and as
     * many again in bursts of {@code burst}, beside a CPU hog at {@code hogNice} (-1: none).
     * {@code restartLoops}: the loops too go through the Docker restart (they miss it).
     */
    record Settings(int warmup, int containers, int burst, int createThenStart, Duration createGap, int acrossRestart,
                    int probeTimeoutSeconds, int hogNice, int readyLaunches, Duration settle, boolean restartLoops,
                    PodWeights weights) {

        Settings(int warmup, int containers, int burst, int createThenStart, Duration createGap, int acrossRestart,
                 int probeTimeoutSeconds, int hogNice, int readyLaunches, Duration settle, boolean restartLoops) {
            this(warmup, containers, burst, createThenStart, createGap, acrossRestart, probeTimeoutSeconds, hogNice, readyLaunches,
                    settle, restartLoops, PodWeights.SHARED);
        }

        static Settings fromSystemProperties() {
            return new Settings(
                    Integer.getInteger("bench.warmup", 400),
                    Integer.getInteger("bench.containers", 200),
                    Integer.getInteger("bench.burst", 20),
                    Integer.getInteger("bench.createThenStart", 50),
                    Duration.ofMillis(Integer.getInteger("bench.createGapMs", 300)),
                    Integer.getInteger("bench.acrossRestart", 20),
                    Integer.getInteger("bench.probeTimeoutSeconds", 15),
                    Integer.getInteger("bench.hogNice", 0),
                    Integer.getInteger("bench.readyLaunches", 5),
                    Duration.ofSeconds(5),
                    true,
                    PodWeights.fromSystemProperties());
        }

        /** The busy loops of the bursts, and where the agent runs, as the report names them. */
        String load() {
            return (hog() ? "beside " + weights.describeLoops(hogNice) : "on an otherwise idle node") + "; " + weights.agentPlace();
        }

        boolean hog() {
            return hogNice >= 0;
        }
    }

    /**
     * What one subject achieved. Exposures in ms; {@code missed} never saw their aliases. Warm
     * figures are per measured container ({@code containers}, after {@code warmup}); {@code steadyAfter}
     * says after how many containers the steady RSS was read.
     */
    record Result(String subject, long readyMs, Stats sequentialExposure, Stats burstExposure,
                  Stats startExposure, int startMissed, int startTotal, int startPresent, int burstPresent, int burstTotal,
                  Stats createExposure, int createBeforeStart, int createTotal, Stats repair,
                  double cpuPerContainerMs, double warmCpuPerContainerMs, Map<String, Double> warmCpuByThreadMs,
                  double warmAllocatedPerContainerBytes, double peakRssMiB, double steadyRssMiB, int steadyAfter,
                  int restartMissed, int restartTotal, java.time.Instant measuredFrom, java.time.Instant measuredTo) {
    }

    private final Workload workload;
    private final Settings settings;

    BenchmarkRun(Workload workload, Settings settings) {
        this.workload = workload;
        this.settings = settings;
    }

    Result run(Subject subject) throws Exception {
        Steps steps = new Steps(subject.name());
        long ready = subject.start();
        steps.done("start");
        // As NriStartTimes: the agent weighted as its pod's request (the loops a user would write stay as they are).
        try (PodCgroup pod = settings.weights().agentInPod() && subject instanceof AgentSubject agent
                ? settings.weights().agentPod("daa-bench-agent-" + agent.pid()).add(agent.pid()) : null) {
            return measure(subject, steps, ready);
        }
    }

    private Result measure(Subject subject, Steps steps, long ready) throws Exception {
        double cpuBefore = subject.cpuSeconds();
        // Class loading and the JIT happen here, as on a node whose agent has been up a while.
        List<String> warm = workload.sequential(settings.warmup());
        settle(warm);
        workload.remove(warm);
        steps.done("warm-up");
        // The measured containers: what each costs a warm subject.
        java.time.Instant measuredFrom = java.time.Instant.now();
        double allocatedFrom = subject.allocatedBytes();
        double cpuWarmFrom = subject.cpuSeconds();
        Map<String, Double> threadsFrom = subject.threadCpuSeconds();
        List<String> sequential = workload.sequential(settings.containers());
        settle(sequential);
        double cpuWarmTo = subject.cpuSeconds();
        Map<String, Double> threadsTo = subject.threadCpuSeconds();
        double allocatedTo = subject.allocatedBytes();
        java.time.Instant measuredTo = java.time.Instant.now();
        int measured = Math.max(1, settings.containers());
        double warmPerContainer = (cpuWarmTo - cpuWarmFrom) * 1000 / measured;
        Map<String, Double> warmThreads = new java.util.TreeMap<>();
        threadsTo.forEach((name, seconds) -> {
            double ms = (seconds - threadsFrom.getOrDefault(name, 0.0)) * 1000 / measured;
            if (ms > 0) {
                warmThreads.put(name, ms);
            }
        });
        steps.done("one after another");
        List<String> bursts;
        if (settings.hog()) {
            try (CpuHog hog = settings.weights().loops(settings.hogNice())) {
                bursts = workload.bursts(settings.containers(), settings.burst());
            }
        } else {
            bursts = workload.bursts(settings.containers(), settings.burst());
        }
        List<String> startPath = new ArrayList<>(sequential);
        startPath.addAll(bursts);
        steps.done("bursts");
        List<String> created = workload.createThenStart(settings.createThenStart(), settings.createGap());
        steps.done("create-then-start");
        Map<String, Workload.Probe> startProbes = workload.probes(startPath);
        Map<String, Workload.Probe> createProbes = workload.probes(created);
        double cpuAfter = subject.cpuSeconds();
        Thread.sleep(settings.settle().toMillis());
        double steady = subject.rssMiB();
        double peak = subject.peakRssMiB();
        Map<String, Double> repairs = subject.repairMillis();
        List<Double> repairMillis = new ArrayList<>();
        for (String id : startPath) {
            Double ms = repairs.get(id.substring(0, 12));
            if (ms != null) {
                repairMillis.add(ms);
            }
        }
        workload.remove(startPath);
        workload.remove(created);
        steps.done("probes read, settled, removed");

        Map<String, Workload.Probe> restartProbes = Map.of();
        if (settings.restartLoops() || subject instanceof AgentSubject) {
            List<String> restarted = workload.acrossRestart(settings.acrossRestart());
            restartProbes = workload.probes(restarted);
            workload.remove(restarted);
            steps.done("across a restart");
        }
        subject.close();
        steps.done("stop");
        System.out.println(steps);

        int handled = warm.size() + startPath.size() + created.size();
        Map<String, Workload.Probe> burstProbes = only(startProbes, bursts);
        return new Result(subject.name(), ready,
                exposures(only(startProbes, sequential)), exposures(burstProbes),
                exposures(startProbes), missed(startProbes), startProbes.size(), present(startProbes),
                present(burstProbes), burstProbes.size(),
                exposures(createProbes), present(createProbes), createProbes.size(),
                Stats.of(repairMillis), (cpuAfter - cpuBefore) * 1000 / handled, warmPerContainer, warmThreads,
                (allocatedTo - allocatedFrom) / measured, peak, steady, handled,
                missed(restartProbes), restartProbes.size(), measuredFrom, measuredTo);
    }

    /** How long each step of one subject's run took, printed after it: where a slow run spent its time. */
    private static final class Steps {
        private final StringBuilder text;
        private long from = System.nanoTime();

        Steps(String subject) {
            text = new StringBuilder("[bench] " + subject + ", seconds per step:");
        }

        void done(String step) {
            long now = System.nanoTime();
            text.append(String.format(" %s %.1f;", step, (now - from) / 1e9));
            from = now;
        }

        @Override
        public String toString() {
            return text.toString();
        }
    }

    /** Until the last container's probe has reported, and a second more: the subject's work for them is done. */
    private void settle(List<String> ids) throws InterruptedException {
        if (!ids.isEmpty()) {
            workload.probes(List.of(ids.getLast()));
        }
        Thread.sleep(1000);
    }

    private static Stats exposures(Map<String, Workload.Probe> probes) {
        return Stats.of(probes.values().stream().filter(p -> !p.missed())
                .map(p -> p.presentAtStart() ? 0.0 : p.exposureMs()).toList());
    }

    private static Map<String, Workload.Probe> only(Map<String, Workload.Probe> probes, List<String> ids) {
        Map<String, Workload.Probe> some = new java.util.HashMap<>();
        ids.forEach(id -> some.put(id, probes.get(id)));
        return some;
    }

    private static int missed(Map<String, Workload.Probe> probes) {
        return (int) probes.values().stream().filter(Workload.Probe::missed).count();
    }

    private static int present(Map<String, Workload.Probe> probes) {
        return (int) probes.values().stream().filter(Workload.Probe::presentAtStart).count();
    }
}
