package io.driveralias.agent.bench;

import java.util.List;

/** The figures side by side, as the README and the issue note quote them. */
final class BenchmarkReport {

    private BenchmarkReport() {
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
            b.append(String.format("  exposure, start path      %s; missed %d of %d%n", r.startExposure().row("ms"),
                    r.startMissed(), r.startTotal()));
            b.append(String.format("  exposure, create+start    %s; present at first instruction %d of %d%n",
                    r.createExposure().row("ms"), r.createBeforeStart(), r.createTotal()));
            b.append(String.format("  repair duration (own log) %s%n", r.repair().row("ms")));
            b.append(String.format("  CPU per container         %.2f ms%n", r.cpuPerContainerMs()));
            b.append(String.format("  RSS peak / steady         %.1f / %.1f MiB%n", r.peakRssMiB(), r.steadyRssMiB()));
            b.append(String.format("  across a dockerd restart  missed %d of %d%n%n", r.restartMissed(), r.restartTotal()));
        }
        if (results.size() == 2) {
            BenchmarkRun.Result agent = results.get(0);
            BenchmarkRun.Result shell = results.get(1);
            b.append(String.format("p99 start-path exposure: shell loop / agent = %.1fx%n",
                    shell.startExposure().p99() / Math.max(agent.startExposure().p99(), 0.001)));
            b.append(String.format("missed across the restart: agent %d, shell loop %d%n",
                    agent.restartMissed(), shell.restartMissed()));
        }
        return b.toString();
    }
}
