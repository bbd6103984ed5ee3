package io.driveralias.agent.bench;

import java.util.List;
import java.util.Map;
import java.util.function.ToDoubleFunction;

/**
 * The NRI figures and the containerd bursts as the report prints them, each with its conditions,
 * against the targets of issue 24. A CPU figure from less than a second of CPU is marked: at 10 ms
 * a clock tick, fewer ticks than that move a ratio by more than the difference it would show.
 */
final class NriReport {

    /** The least CPU a figure is taken from. */
    static final double ENOUGH_CPU_SECONDS = 1.0;
    static final double GPU_TARGET_MS = 20;
    static final double PLAIN_TARGET_MS = 1;
    static final double BURST_TARGET_PERCENT = 99;

    private NriReport() {
    }

    private static String verdict(boolean met) {
        return met ? "met" : "MISSED";
    }

    /** "N ms (S s of CPU over C)", marked where S is under a second. */
    static String cpu(double seconds, int count, String unit) {
        return String.format("%.2f ms per %s (%.2f s of CPU over %d%s)", seconds * 1000 / Math.max(1, count), unit, seconds, count,
                seconds < ENOUGH_CPU_SECONDS ? "; UNDER 1 s OF CPU: not a figure" : "");
    }

    private static void byThread(StringBuilder b, Map<String, Double> ms) {
        b.append("      by thread (ms each):");
        ms.entrySet().stream().sorted(Map.Entry.<String, Double>comparingByValue().reversed()).limit(8)
                .forEach(e -> b.append(String.format(" %s %.2f;", e.getKey(), e.getValue())));
        b.append('\n');
    }

    static String startTimes(NriStartTimes.Result r) {
        NriStartTimes.Settings s = r.settings();
        StringBuilder b = new StringBuilder();
        b.append(String.format("== containerd %s, NRI: what the agent adds to a pod's start, against a plugin that answers at once%n",
                r.version()));
        b.append(String.format("  %d rounds of a block each (agent and at-once in turn, ABBA), a block: %d GPU pods then %d ordinary"
                        + " pods one after another, %s; %s, started anew for each block, %d pods served first unmeasured;"
                        + " %s; plugins of the benchmark at index 10 and 90 around the measured one at 50; load (1, 5, 15 min)"
                        + " before %s, after %s%n", s.rounds(), s.pods(), s.pods(), s.load(), s.agentPlace(), s.warmup(),
                s.floorPlace(), r.loadBefore(), r.loadAfter()));
        for (boolean gpu : List.of(true, false)) {
            double target = gpu ? GPU_TARGET_MS : PLAIN_TARGET_MS;
            b.append(String.format("  %s (n = %d agent, %d at once), p50 / p95 / p99 ms:  agent                   at once"
                            + "                 added%n",
                    gpu ? "GPU pods" : "ordinary pods", count(r, NriStartTimes.AGENT, gpu), count(r, NriStartTimes.AT_ONCE, gpu)));
            part(b, r, gpu, "CRI CreateContainer", NriStartTimes.Sample::createContainerMs, Double.NaN);
            part(b, r, gpu, "CRI StartContainer", NriStartTimes.Sample::criMs, target);
            part(b, r, gpu, "  task created (call to index 10)", NriStartTimes.Sample::createTaskMs, Double.NaN);
            part(b, r, gpu, "  held (index 10's answer to 90's call)", NriStartTimes.Sample::heldMs, target);
            part(b, r, gpu, "  task started (90's answer to return)", NriStartTimes.Sample::startTaskMs, Double.NaN);
        }
        long gpuAgent = r.samples().stream().filter(x -> x.gpu() && x.subject().equals(NriStartTimes.AGENT)).count();
        long present = r.samples().stream().filter(x -> x.gpu() && x.subject().equals(NriStartTimes.AGENT) && x.present()).count();
        b.append(String.format("  GPU pods with their aliases at the first instruction (agent's blocks): %d of %d%n", present, gpuAgent));
        b.append(String.format("  the agent's own time for a GPU pod (its log: the handler's entry to verified, whole ms): %s%n",
                Stats.of(r.agentRepairMs()).row("ms")));
        b.append(String.format("  the agent's RSS at the end of each of its blocks (peak / then, MiB): %s%n", r.rss().stream()
                .map(x -> String.format("%.1f / %.1f", x.peakMiB(), x.endMiB())).collect(java.util.stream.Collectors.joining("; "))));
        String beside = s.hogNice() >= 0 ? "beside the busy loops" : "no load beside";
        b.append("  the agent's CPU, ").append(beside).append(": ").append(cpu(r.gpuCpu().seconds(), r.gpuCpu().pods(), "GPU pod"))
                .append('\n');
        byThread(b, r.gpuCpu().byThreadMs());
        b.append("  the agent's CPU, ").append(beside).append(": ").append(cpu(r.plainCpu().seconds(), r.plainCpu().pods(),
                "ordinary pod")).append('\n');
        byThread(b, r.plainCpu().byThreadMs());
        return b.toString();
    }

    /** One row: the part's p50 / p95 / p99 for the agent and at once, the differences, and the verdict on p99 where {@code target} is a number. */
    private static void part(StringBuilder b, NriStartTimes.Result r, boolean gpu, String name, ToDoubleFunction<NriStartTimes.Sample> f,
                             double target) {
        Stats agent = stats(r.samples(), NriStartTimes.AGENT, gpu, f);
        Stats once = stats(r.samples(), NriStartTimes.AT_ONCE, gpu, f);
        double addedP99 = agent.p99() - once.p99();
        b.append(String.format("    %-40s %6.1f / %6.1f / %6.1f  %6.1f / %6.1f / %6.1f  %6.2f / %6.2f / %6.2f%s%n", name, agent.p50(),
                agent.p95(), agent.p99(), once.p50(), once.p95(), once.p99(), agent.p50() - once.p50(), agent.p95() - once.p95(), addedP99,
                Double.isNaN(target) ? "" : String.format("  (p99 target <= %.0f ms: %s)", target, verdict(addedP99 <= target))));
    }

    private static long count(NriStartTimes.Result r, String subject, boolean gpu) {
        return r.samples().stream().filter(x -> x.subject().equals(subject) && x.gpu() == gpu).count();
    }

    private static Stats stats(List<NriStartTimes.Sample> samples, String subject, boolean gpu, ToDoubleFunction<NriStartTimes.Sample> f) {
        return Stats.of(samples.stream().filter(x -> x.subject().equals(subject) && x.gpu() == gpu).map(f::applyAsDouble)
                .filter(v -> !Double.isNaN(v)).toList());
    }

    static String footprint(NriFootprint.Result r, String containerdVersion) {
        NriFootprint.Settings s = r.settings();
        StringBuilder b = new StringBuilder();
        b.append(String.format("== the agent watching Docker and containerd %s together: CPU and RSS, no load beside%n",
                containerdVersion));
        b.append(String.format("  each agent: %d docker run and %d CRI pods of warm-up, then %d docker run, %d GPU pods, %d ordinary"
                + " pods, %d sandboxes alone, one after another; RSS 5 s after; load before %s, after %s%n", s.warmupDocker(),
                s.warmupPods(), s.containers(), s.containers(), s.containers(), 2 * s.containers(), r.loadBefore(), r.loadAfter()));
        for (NriFootprint.Subject subject : r.subjects()) {
            b.append("  ").append(subject.name()).append('\n');
            for (NriFootprint.Phase p : subject.phases()) {
                b.append(String.format("    %-16s %s%s%n", p.name(), cpu(p.cpuSeconds(), p.count(), "container"),
                        p.gpu() > 0 ? String.format("; at the first instruction %d of %d", p.present(), p.gpu()) : ""));
                byThread(b, p.byThreadMs());
            }
            b.append(String.format("    RSS peak / steady %.1f / %.1f MiB after %d containers and %d sandboxes; steady: %s%n",
                    subject.peakRssMiB(), subject.steadyRssMiB(), subject.containers(), 2 * s.containers(),
                    subject.memory().replace("\n", "\n      ")));
        }
        NriFootprint.Subject nri = r.subjects().stream().filter(x -> x.name().equals(NriFootprint.NRI)).findFirst().orElseThrow();
        NriFootprint.Subject events = r.subjects().stream().filter(x -> x.name().equals(NriFootprint.EVENTS)).findFirst().orElseThrow();
        NriFootprint.Phase gpu = nri.phase(NriFootprint.GPU_POD);
        NriFootprint.Phase docker = nri.phase(NriFootprint.DOCKER_RUN);
        double container = gpu.perContainerMs() - nri.phase(NriFootprint.SANDBOX).perContainerMs();
        b.append(String.format("  CPU per GPU container through NRI %.2f ms (its pod %.2f ms less a sandbox alone %.2f ms), per docker run"
                        + " %.2f ms, the same agent (target: no more than Docker's): %s; the whole pod: %s%n", container,
                gpu.perContainerMs(), nri.phase(NriFootprint.SANDBOX).perContainerMs(), docker.perContainerMs(),
                verdict(container <= docker.perContainerMs()), verdict(gpu.perContainerMs() <= docker.perContainerMs())));
        b.append(String.format("  steady RSS with NRI %.1f MiB, through the events %.1f MiB (target: no more than Docker + containerd"
                        + " without NRI, 102 MiB in docs/footprint.md's last run): %s%n", nri.steadyRssMiB(), events.steadyRssMiB(),
                verdict(nri.steadyRssMiB() <= Math.max(102, events.steadyRssMiB()))));
        return b.toString();
    }

    static String bursts(ContainerdBursts.Result r) {
        ContainerdBursts.Settings s = r.settings();
        StringBuilder b = new StringBuilder();
        b.append(String.format("== containerd bursts: %d bursts of %d GPU pods at once, %s; the agent started anew for each path,"
                        + " %d pods one after another first, unmeasured%n", s.bursts(), s.size(),
                s.load(), s.warmup()));
        for (ContainerdBursts.Bursts p : r.paths()) {
            b.append(String.format("  %s, containerd %s: %d of %d at the first instruction, %.1f %% (target >= %.0f %%): %s;"
                            + " the others' exposure %s; never repaired %d%n", p.name(), p.version(), p.present(), p.total(), p.percent(),
                    BURST_TARGET_PERCENT, verdict(p.percent() >= BURST_TARGET_PERCENT), p.exposure().row("ms"), p.missed()));
            b.append(String.format("    CRI StartContainer in the bursts %s; the agent's CPU %s; load before %s, after %s%n",
                    p.criStartMs().row("ms"), cpu(p.cpuSeconds(), p.total(), "pod"), p.loadBefore(), p.loadAfter()));
        }
        return b.toString();
    }
}
