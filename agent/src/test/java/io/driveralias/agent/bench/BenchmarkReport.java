package io.driveralias.agent.bench;

import java.util.List;

/** The figures side by side, as the README and the issue note quote them. */
final class BenchmarkReport {

    /** The agent with {@code --before-start=false}: the start path alone. */
    static final String START_PATH_ONLY = "agent, start path only";

    private BenchmarkReport() {
    }

    private static java.util.Optional<BenchmarkRun.Result> find(List<BenchmarkRun.Result> results, String name) {
        return results.stream().filter(r -> r.subject().equals(name)).findFirst();
    }

    private static double ratio(double a, double b) {
        return a / Math.max(b, 0.001);
    }

    static String render(BenchmarkRun.Settings settings, List<BenchmarkRun.Result> results) {
        StringBuilder b = new StringBuilder();
        b.append(String.format("driver-alias-agent benchmark: %d sequential + %d in bursts of %d (start path), "
                        + "%d create-then-start (%d ms apart), %d across a dockerd restart; %d cores%n%n",
                settings.containers(), settings.containers(), settings.burst(), settings.createThenStart(),
                settings.createGap().toMillis(), settings.acrossRestart(), Runtime.getRuntime().availableProcessors()));
        for (BenchmarkRun.Result r : results) {
            b.append("== ").append(r.subject()).append('\n');
            b.append(String.format("  ready after launch        %d ms%n", r.readyMs()));
            b.append(String.format("  exposure, sequential      %s%n", r.sequentialExposure().row("ms")));
            b.append(String.format("  exposure, bursts          %s%n", r.burstExposure().row("ms")));
            b.append(String.format("  exposure, start path      %s; missed %d of %d; present at first instruction %d%n",
                    r.startExposure().row("ms"), r.startMissed(), r.startTotal(), r.startPresent()));
            b.append(String.format("  exposure, create+start    %s; present at first instruction %d of %d%n",
                    r.createExposure().row("ms"), r.createBeforeStart(), r.createTotal()));
            b.append(String.format("  repair duration (own log) %s%n", r.repair().row("ms")));
            b.append(String.format("  CPU per container         %.2f ms over the run; %.2f ms warm (2nd half, one after another)%n",
                    r.cpuPerContainerMs(), r.warmCpuPerContainerMs()));
            if (!r.warmCpuByThreadMs().isEmpty()) {
                // Where a warm container's CPU goes, by thread (clock ticks of 10 ms: coarse).
                StringBuilder threads = new StringBuilder();
                r.warmCpuByThreadMs().entrySet().stream()
                        .sorted(java.util.Map.Entry.<String, Double>comparingByValue().reversed()).limit(8)
                        .forEach(e -> threads.append(String.format(" %s %.2f;", e.getKey(), e.getValue())));
                b.append("  warm CPU by thread (ms)  ").append(threads).append('\n');
            }
            b.append(String.format("  RSS peak / steady         %.1f / %.1f MiB%n", r.peakRssMiB(), r.steadyRssMiB()));
            b.append(String.format("  across a dockerd restart  missed %d of %d%n%n", r.restartMissed(), r.restartTotal()));
        }
        java.util.Optional<BenchmarkRun.Result> agent = find(results, "agent");
        java.util.Optional<BenchmarkRun.Result> floor = find(results, "floor loop");
        java.util.Optional<BenchmarkRun.Result> shell = find(results, "shell loop");
        java.util.Optional<BenchmarkRun.Result> startOnly = find(results, START_PATH_ONLY);
        if (startOnly.isPresent() && floor.isPresent()) {
            BenchmarkRun.Result a = startOnly.get();
            BenchmarkRun.Result f = floor.get();
            b.append(String.format("start-path exposure, agent (start path only) / floor loop: p50 %.2fx (target <= 1.3), "
                            + "p99 %.2fx (target <= 2)%n", ratio(a.startExposure().p50(), f.startExposure().p50()),
                    ratio(a.startExposure().p99(), f.startExposure().p99())));
        }
        agent.ifPresent(a -> {
            b.append(String.format("agent, bursts p99 %.1f ms (target <= 60); CPU per container %.2f ms over the run, "
                    + "%.2f ms warm (target <= 3); steady RSS %.1f MiB (target <= 80); ready %d ms (target <= 1000)%n",
                    a.burstExposure().p99(), a.cpuPerContainerMs(), a.warmCpuPerContainerMs(), a.steadyRssMiB(),
                    a.readyMs()));
            b.append(String.format("agent, aliases at the first instruction: create+start %d of %d, docker run %d of %d%n",
                    a.createBeforeStart(), a.createTotal(), a.startPresent(), a.startTotal()));
        });
        if (agent.isPresent() && shell.isPresent()) {
            b.append(String.format("p99 start-path exposure: shell loop / agent = %.1fx%n",
                    shell.get().startExposure().p99() / Math.max(agent.get().startExposure().p99(), 0.001)));
            b.append(String.format("missed across the restart: agent %d, shell loop %d%n",
                    agent.get().restartMissed(), shell.get().restartMissed()));
        }
        return b.toString();
    }
}
