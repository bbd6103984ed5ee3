package io.driveralias.agent.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** One subject through the whole workload: start path, bursts, create-then-start, a Docker restart. */
final class BenchmarkRun {

    /** How much work: {@code containers} for each of the two start-path phases. */
    record Settings(int containers, int burst, int createThenStart, Duration createGap, int acrossRestart,
                    int probeTimeoutSeconds) {

        static Settings fromSystemProperties() {
            return new Settings(
                    Integer.getInteger("bench.containers", 200),
                    Integer.getInteger("bench.burst", 20),
                    Integer.getInteger("bench.createThenStart", 50),
                    Duration.ofMillis(Integer.getInteger("bench.createGapMs", 300)),
                    Integer.getInteger("bench.acrossRestart", 20),
                    Integer.getInteger("bench.probeTimeoutSeconds", 15));
        }
    }

    /** What one subject achieved. Exposures in ms; {@code missed} never saw their aliases. */
    record Result(String subject, long readyMs, Stats sequentialExposure, Stats burstExposure,
                  Stats startExposure, int startMissed, int startTotal, int startPresent,
                  Stats createExposure, int createBeforeStart, int createTotal, Stats repair,
                  double cpuPerContainerMs, double warmCpuPerContainerMs, Map<String, Double> warmCpuByThreadMs,
                  double peakRssMiB, double steadyRssMiB,
                  int restartMissed, int restartTotal) {
    }

    private final Workload workload;
    private final Settings settings;

    BenchmarkRun(Workload workload, Settings settings) {
        this.workload = workload;
        this.settings = settings;
    }

    Result run(Subject subject) throws Exception {
        long ready = subject.start();
        double cpuBefore = subject.cpuSeconds();
        // The first half pays for class loading and the JIT; the second half is what each
        // container costs a warm agent, as on a node that has been up for a while.
        int firstHalf = settings.containers() / 2;
        List<String> sequential = new ArrayList<>(workload.sequential(firstHalf));
        double cpuWarmFrom = subject.cpuSeconds();
        Map<String, Double> threadsFrom = subject.threadCpuSeconds();
        sequential.addAll(workload.sequential(settings.containers() - firstHalf));
        double cpuWarmTo = subject.cpuSeconds();
        int warmCount = Math.max(1, settings.containers() - firstHalf);
        double warmPerContainer = (cpuWarmTo - cpuWarmFrom) * 1000 / warmCount;
        Map<String, Double> warmThreads = new java.util.TreeMap<>();
        subject.threadCpuSeconds().forEach((name, seconds) -> {
            double ms = (seconds - threadsFrom.getOrDefault(name, 0.0)) * 1000 / warmCount;
            if (ms > 0) {
                warmThreads.put(name, ms);
            }
        });
        List<String> bursts = workload.bursts(settings.containers(), settings.burst());
        List<String> startPath = new ArrayList<>(sequential);
        startPath.addAll(bursts);
        List<String> created = workload.createThenStart(settings.createThenStart(), settings.createGap());
        Map<String, Workload.Probe> startProbes = workload.probes(startPath);
        Map<String, Workload.Probe> createProbes = workload.probes(created);
        double cpuAfter = subject.cpuSeconds();
        Thread.sleep(5000);
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

        List<String> restarted = workload.acrossRestart(settings.acrossRestart());
        Map<String, Workload.Probe> restartProbes = workload.probes(restarted);
        workload.remove(restarted);
        subject.close();

        int handled = startPath.size() + created.size();
        return new Result(subject.name(), ready,
                exposures(only(startProbes, sequential)), exposures(only(startProbes, bursts)),
                exposures(startProbes), missed(startProbes), startProbes.size(),
                (int) startProbes.values().stream().filter(Workload.Probe::presentAtStart).count(),
                exposures(createProbes),
                (int) createProbes.values().stream().filter(Workload.Probe::presentAtStart).count(), createProbes.size(),
                Stats.of(repairMillis), (cpuAfter - cpuBefore) * 1000 / handled, warmPerContainer, warmThreads, peak, steady,
                missed(restartProbes), restartProbes.size());
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
}
