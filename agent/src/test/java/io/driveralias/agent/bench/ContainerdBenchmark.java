package io.driveralias.agent.bench;

import io.driveralias.agent.testing.ContainerdHarness;
import io.driveralias.agent.testing.CriClient;
import io.driveralias.agent.testing.DockerHarness;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * The containerd path beside Docker's ({@code -Dbench.containerd=true}): the packaged agent with
 * {@code --runtime containerd} against the private containerd of {@link ContainerdHarness}, the
 * same probe, image and driver files as on Docker. Three phases of {@code bench.containerd.containers}
 * containers each, one after another: pods made through the CRI and started at once (the kubelet
 * calls StartContainer as soon as CreateContainer returns), the same with Docker's
 * create-then-start pause ({@code bench.createGapMs}) between them, and {@code ctr run}. For each:
 * exposure (the probe's), how many had their aliases at their first instruction, and the agent's
 * CPU per container, over the phase and warm (its second half). Before them, {@code
 * bench.containerd.warmup} pods (100), unmeasured, so that the agent is measured warm, as on Docker.
 */
final class ContainerdBenchmark {

    static final String SUBJECT = "agent on containerd";
    private static final String SANDBOXES = "CRI, pod sandboxes alone";

    record Settings(int warmup, int containers, Duration createGap, int probeTimeoutSeconds) {
        static Settings fromSystemProperties() {
            return new Settings(Integer.getInteger("bench.containerd.warmup", 100),
                    Integer.getInteger("bench.containerd.containers", 40),
                    Duration.ofMillis(Integer.getInteger("bench.createGapMs", 300)),
                    Integer.getInteger("bench.probeTimeoutSeconds", 15));
        }
    }

    /** One phase: its exposures (ms; 0 where the aliases were there at the first instruction), counts and CPU. */
    record Phase(String name, Stats exposure, int present, int total, int missed, double cpuPerContainerMs,
                 double warmCpuPerContainerMs, Map<String, Double> warmCpuByThreadMs) {
    }

    record Result(long readyMs, int warmup, List<Phase> phases, double peakRssMiB, double steadyRssMiB) {
    }

    @FunctionalInterface
    private interface Containers {
        List<ContainerdWorkload.Started> start(int count) throws Exception;
    }

    private ContainerdBenchmark() {
    }

    static Result run(Settings settings, DockerHarness docker, List<String> jvmOptions) throws Exception {
        ContainerdHarness containerd = ContainerdHarness.get();
        ContainerdWorkload workload = new ContainerdWorkload(containerd, Workload.benchDir(), settings.probeTimeoutSeconds());
        // The Docker subject's launcher, pointed at containerd alone (--runtime containerd: Docker is not watched).
        try (AgentSubject agent = new AgentSubject(docker, jvmOptions, SUBJECT, List.of("--runtime", "containerd",
                "--containerd-address", containerd.address(), "--containerd-state", containerd.stateDir().toString()))) {
            long ready = agent.start();
            // As warm as the Docker agent is measured (its own warm-up): CRI pods, unmeasured, 20 at a time.
            for (int left = settings.warmup(); left > 0; left -= 20) {
                List<ContainerdWorkload.Started> started = workload.criCreateThenStart(Math.min(20, left), Duration.ZERO);
                workload.probes(started);
                workload.remove(started);
            }
            int n = settings.containers();
            List<Phase> phases = new ArrayList<>();
            phases.add(phase("CRI, create then start at once", n, agent, workload,
                    count -> workload.criCreateThenStart(count, Duration.ZERO)));
            phases.add(phase("CRI, create, " + settings.createGap().toMillis() + " ms, start", n, agent, workload,
                    count -> workload.criCreateThenStart(count, settings.createGap())));
            phases.add(phase("ctr run", n, agent, workload, workload::ctrRun));
            phases.add(sandboxes(n, agent, workload));
            Thread.sleep(5000);
            return new Result(ready, settings.warmup(), phases, agent.peakRssMiB(), agent.rssMiB());
        }
    }

    private static Phase phase(String name, int count, Subject agent, ContainerdWorkload workload, Containers containers)
            throws Exception {
        double cpuBefore = agent.cpuSeconds();
        List<ContainerdWorkload.Started> started = new ArrayList<>(containers.start(count / 2));
        double cpuWarmFrom = agent.cpuSeconds();
        Map<String, Double> threadsFrom = agent.threadCpuSeconds();
        int warm = Math.max(1, count - count / 2);
        started.addAll(containers.start(count - count / 2));
        double cpuAfter = agent.cpuSeconds();
        Map<String, Double> byThread = new TreeMap<>();
        agent.threadCpuSeconds().forEach((thread, seconds) -> {
            double ms = (seconds - threadsFrom.getOrDefault(thread, 0.0)) * 1000 / warm;
            if (ms > 0) {
                byThread.put(thread, ms);
            }
        });
        Map<String, Workload.Probe> probes = workload.probes(started);
        workload.remove(started);
        List<Double> exposures = probes.values().stream().filter(p -> !p.missed())
                .map(p -> p.presentAtStart() ? 0.0 : p.exposureMs()).toList();
        return new Phase(name, Stats.of(exposures), (int) probes.values().stream().filter(Workload.Probe::presentAtStart).count(),
                probes.size(), (int) probes.values().stream().filter(Workload.Probe::missed).count(),
                (cpuAfter - cpuBefore) * 1000 / Math.max(1, count), (cpuAfter - cpuWarmFrom) * 1000 / warm, byThread);
    }

    /** Where a phase's warm CPU went, by thread (clock ticks of 10 ms: coarse), the largest first. */
    private static void appendThreads(StringBuilder b, Phase p) {
        p.warmCpuByThreadMs().entrySet().stream().sorted(Map.Entry.<String, Double>comparingByValue().reversed()).limit(8)
                .forEach(e -> b.append(String.format(" %s %.2f;", e.getKey(), e.getValue())));
        b.append('\n');
    }

    /**
     * Pods without containers: what each pod's sandbox (its events, its description, excluded)
     * costs, within the CRI phases' figures. The agent is given two seconds to finish with them.
     */
    private static Phase sandboxes(int count, Subject agent, ContainerdWorkload workload) throws InterruptedException {
        double before = agent.cpuSeconds();
        Map<String, Double> threadsFrom = agent.threadCpuSeconds();
        List<CriClient.Sandbox> pods = workload.sandboxes(count);
        Thread.sleep(2000);
        double after = agent.cpuSeconds();
        Map<String, Double> byThread = new TreeMap<>();
        agent.threadCpuSeconds().forEach((thread, seconds) -> {
            double ms = (seconds - threadsFrom.getOrDefault(thread, 0.0)) * 1000 / count;
            if (ms > 0) {
                byThread.put(thread, ms);
            }
        });
        workload.removePods(pods);
        double perPod = (after - before) * 1000 / count;
        return new Phase(SANDBOXES, Stats.of(List.of()), 0, 0, 0, perPod, perPod, byThread);
    }

    /** The containerd figures, and their CPU beside the Docker agent's of the same run. */
    static String render(Result r, Optional<BenchmarkRun.Result> dockerAgent) {
        StringBuilder b = new StringBuilder();
        b.append("== ").append(SUBJECT).append(" (the same probe, image and driver files; pods of one container; after ")
                .append(r.warmup()).append(" warm-up pods)\n");
        b.append(String.format("  ready after launch        %d ms%n", r.readyMs()));
        for (Phase p : r.phases()) {
            if (p.name().equals(SANDBOXES)) {
                b.append(String.format("  %s: CPU per pod %.2f ms; by thread:", p.name(), p.cpuPerContainerMs()));
                appendThreads(b, p);
                continue;
            }
            b.append(String.format("  %s: exposure %s; present at first instruction %d of %d; missed %d%n", p.name(),
                    p.exposure().row("ms"), p.present(), p.total(), p.missed()));
            b.append(String.format("    CPU per container %.2f ms over the phase, %.2f ms warm (its 2nd half); warm by thread:",
                    p.cpuPerContainerMs(), p.warmCpuPerContainerMs()));
            appendThreads(b, p);
        }
        b.append(String.format("  RSS peak / steady         %.1f / %.1f MiB%n", r.peakRssMiB(), r.steadyRssMiB()));
        dockerAgent.ifPresent(d -> {
            for (Phase p : r.phases().subList(0, 3)) {
                b.append(String.format("warm CPU per container, containerd (%s) / Docker (docker run, one after another):"
                        + " %.2f / %.2f ms = %.2fx (target: no more on containerd)%n", p.name(), p.warmCpuPerContainerMs(),
                        d.warmCpuPerContainerMs(), p.warmCpuPerContainerMs() / Math.max(d.warmCpuPerContainerMs(), 0.001)));
            }
        });
        return b.toString();
    }
}
