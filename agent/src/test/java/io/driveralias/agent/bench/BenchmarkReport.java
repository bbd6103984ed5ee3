package io.driveralias.agent.bench;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** The figures side by side, and against the targets of issue 18, as docs/benchmark.md quotes them. */
final class BenchmarkReport {

    /** The agent with {@code --before-start=false}: the start path alone. */
    static final String START_PATH_ONLY = "agent, start path only";

    private BenchmarkReport() {
    }

    private static Optional<BenchmarkRun.Result> find(List<BenchmarkRun.Result> results, String name) {
        return results.stream().filter(r -> r.subject().equals(name)).findFirst();
    }

    private static double ratio(double a, double b) {
        return a / Math.max(b, 0.001);
    }

    private static String verdict(boolean met) {
        return met ? "met" : "MISSED";
    }

    /** @param readyMs the agent's launches on an idle node, each from launch to {@code /readyz} 200 */
    static String render(BenchmarkRun.Settings settings, List<BenchmarkRun.Result> results, List<Long> readyMs) {
        StringBuilder b = new StringBuilder();
        String hog = settings.load();
        b.append(String.format("driver-alias-agent benchmark: %d warm-up + %d measured one after another, %d in bursts of %d "
                        + "%s, %d create-then-start (%d ms apart), %d across a dockerd restart; %d cores%n%n",
                settings.warmup(), settings.containers(), settings.containers(), settings.burst(), hog,
                settings.createThenStart(), settings.createGap().toMillis(), settings.acrossRestart(),
                Runtime.getRuntime().availableProcessors()));
        for (BenchmarkRun.Result r : results) {
            subject(b, r);
        }
        targets(b, settings, results, readyMs, hog);
        return b.toString();
    }

    private static void subject(StringBuilder b, BenchmarkRun.Result r) {
        b.append("== ").append(r.subject()).append('\n');
        b.append(String.format("  ready after launch        %d ms%n", r.readyMs()));
        b.append(String.format("  exposure, sequential      %s%n", r.sequentialExposure().row("ms")));
        b.append(String.format("  exposure, bursts          %s; present at first instruction %d of %d%n",
                r.burstExposure().row("ms"), r.burstPresent(), r.burstTotal()));
        b.append(String.format("  exposure, start path      %s; missed %d of %d; present at first instruction %d%n",
                r.startExposure().row("ms"), r.startMissed(), r.startTotal(), r.startPresent()));
        b.append(String.format("  exposure, create+start    %s; present at first instruction %d of %d%n",
                r.createExposure().row("ms"), r.createBeforeStart(), r.createTotal()));
        b.append(String.format("  repair duration (own log) %s%n", r.repair().row("ms")));
        b.append(String.format("  CPU per container         %.2f ms over the run; %.2f ms warm (measured, after the warm-up, %s to %s)%n",
                r.cpuPerContainerMs(), r.warmCpuPerContainerMs(), r.measuredFrom(), r.measuredTo()));
        if (!r.warmCpuByThreadMs().isEmpty()) {
            // Where a warm container's CPU goes, by thread (clock ticks of 10 ms: coarse).
            StringBuilder threads = new StringBuilder();
            r.warmCpuByThreadMs().entrySet().stream()
                    .sorted(Map.Entry.<String, Double>comparingByValue().reversed()).limit(8)
                    .forEach(e -> threads.append(String.format(" %s %.2f;", e.getKey(), e.getValue())));
            b.append("  warm CPU by thread (ms)  ").append(threads).append('\n');
        }
        if (!Double.isNaN(r.warmAllocatedPerContainerBytes())) {
            b.append(String.format("  allocated per container   %.1f KB warm (GC log and jcmd GC.heap_info)%n",
                    r.warmAllocatedPerContainerBytes() / 1000));
        }
        b.append(String.format("  RSS peak / steady         %.1f / %.1f MiB after %d containers%n", r.peakRssMiB(),
                r.steadyRssMiB(), r.steadyAfter()));
        b.append(String.format("  across a dockerd restart  missed %d of %d%n%n", r.restartMissed(), r.restartTotal()));
    }

    private static void targets(StringBuilder b, BenchmarkRun.Settings settings, List<BenchmarkRun.Result> results,
                                List<Long> readyMs, String hog) {
        Optional<BenchmarkRun.Result> agent = find(results, "agent");
        Optional<BenchmarkRun.Result> floor = find(results, "floor loop");
        Optional<BenchmarkRun.Result> shell = find(results, "shell loop");
        Optional<BenchmarkRun.Result> startOnly = find(results, START_PATH_ONLY);
        b.append("Against the targets (issue 18):\n");
        if (agent.isPresent() && floor.isPresent()) {
            BenchmarkRun.Result a = agent.get();
            BenchmarkRun.Result f = floor.get();
            double cpu = ratio(a.warmCpuPerContainerMs(), f.warmCpuPerContainerMs());
            b.append(String.format("  warm CPU per container: agent %.2f ms, floor loop %.2f ms, %.1fx (target <= 4x): %s%n",
                    a.warmCpuPerContainerMs(), f.warmCpuPerContainerMs(), cpu, verdict(cpu <= 4)));
        }
        agent.ifPresent(a -> {
            double kb = a.warmAllocatedPerContainerBytes() / 1000;
            b.append(String.format("  allocation per warm container: agent %.1f KB (target <= 100 KB): %s%n", kb,
                    verdict(kb <= 100)));
            double percent = 100.0 * a.burstPresent() / Math.max(1, a.burstTotal());
            b.append(String.format("  bursts of %d %s: agent %d of %d at the first instruction, %.1f %% (target >= 99 %%): %s",
                    settings.burst(), hog, a.burstPresent(), a.burstTotal(), percent, verdict(percent >= 99)));
            floor.ifPresent(f -> b.append(String.format("; floor loop %d of %d", f.burstPresent(), f.burstTotal())));
            b.append('\n');
        });
        if (startOnly.isPresent() && floor.isPresent()) {
            double p99 = ratio(startOnly.get().burstExposure().p99(), floor.get().burstExposure().p99());
            b.append(String.format("  bursts with the early path off: exposure p99 %.1f ms, floor loop %.1f ms, %.1fx "
                            + "(target <= 2x): %s%n", startOnly.get().burstExposure().p99(), floor.get().burstExposure().p99(),
                    p99, verdict(p99 <= 2)));
        }
        agent.ifPresent(a -> b.append(String.format("  steady RSS: agent %.1f MiB after %d containers (target <= 80 MiB after "
                + "1,000): %s%n", a.steadyRssMiB(), a.steadyAfter(), verdict(a.steadyRssMiB() <= 80))));
        if (!readyMs.isEmpty()) {
            List<Long> sorted = new ArrayList<>(readyMs);
            Collections.sort(sorted);
            long median = sorted.get((sorted.size() - 1) / 2);
            b.append(String.format("  ready after launch on an idle node: median %d ms of %d launches %s (target <= 1000 ms): %s%n",
                    median, readyMs.size(), readyMs, verdict(median <= 1000)));
        }
        agent.ifPresent(a -> b.append(String.format("  aliases at the first instruction: create+start %d of %d, docker run %d of %d%n",
                a.createBeforeStart(), a.createTotal(), a.startPresent(), a.startTotal())));
        if (agent.isPresent() && shell.isPresent()) {
            b.append(String.format("  p99 start-path exposure: shell loop %.1f ms, agent %.1f ms%n",
                    shell.get().startExposure().p99(), agent.get().startExposure().p99()));
            if (shell.get().restartTotal() > 0) {
                b.append(String.format("  missed across the restart: agent %d, shell loop %d%n",
                        agent.get().restartMissed(), shell.get().restartMissed()));
            }
        }
    }
}
