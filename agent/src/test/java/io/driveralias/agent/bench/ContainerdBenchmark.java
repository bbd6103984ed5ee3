package io.driveralias.agent.bench;

import io.driveralias.agent.testing.ContainerdHarness;
import io.driveralias.agent.testing.DockerHarness;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The containerd path beside Docker's ({@code -Dbench.containerd=true}): the packaged agent with
 * {@code --runtime containerd} against the private containerd of {@link ContainerdHarness}, the
 * same probe, image and driver files as on Docker. Three phases of {@code bench.containerd.containers}
 * containers each, one after another: pods made through the CRI and started at once (the kubelet
 * calls StartContainer as soon as CreateContainer returns), the same with Docker's
 * create-then-start pause ({@code bench.createGapMs}) between them, and {@code ctr run}. For each:
 * exposure (the probe's), how many had their aliases at their first instruction, and the agent's
 * CPU per container, over the phase and warm (its second half).
 */
final class ContainerdBenchmark {

    static final String SUBJECT = "agent on containerd";

    record Settings(int containers, Duration createGap, int probeTimeoutSeconds) {
        static Settings fromSystemProperties() {
            return new Settings(Integer.getInteger("bench.containerd.containers", 40),
                    Duration.ofMillis(Integer.getInteger("bench.createGapMs", 300)),
                    Integer.getInteger("bench.probeTimeoutSeconds", 15));
        }
    }

    /** One phase: its exposures (ms; 0 where the aliases were there at the first instruction), counts and CPU. */
    record Phase(String name, Stats exposure, int present, int total, int missed, double cpuPerContainerMs,
                 double warmCpuPerContainerMs) {
    }

    record Result(long readyMs, List<Phase> phases, double peakRssMiB, double steadyRssMiB) {
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
            int n = settings.containers();
            List<Phase> phases = new ArrayList<>();
            phases.add(phase("CRI, create then start at once", n, agent, workload,
                    count -> workload.criCreateThenStart(count, Duration.ZERO)));
            phases.add(phase("CRI, create, " + settings.createGap().toMillis() + " ms, start", n, agent, workload,
                    count -> workload.criCreateThenStart(count, settings.createGap())));
            phases.add(phase("ctr run", n, agent, workload, workload::ctrRun));
            Thread.sleep(5000);
            return new Result(ready, phases, agent.peakRssMiB(), agent.rssMiB());
        }
    }

    private static Phase phase(String name, int count, Subject agent, ContainerdWorkload workload, Containers containers)
            throws Exception {
        double cpuBefore = agent.cpuSeconds();
        List<ContainerdWorkload.Started> started = new ArrayList<>(containers.start(count / 2));
        double cpuWarmFrom = agent.cpuSeconds();
        started.addAll(containers.start(count - count / 2));
        double cpuAfter = agent.cpuSeconds();
        Map<String, Workload.Probe> probes = workload.probes(started);
        workload.remove(started);
        List<Double> exposures = probes.values().stream().filter(p -> !p.missed())
                .map(p -> p.presentAtStart() ? 0.0 : p.exposureMs()).toList();
        return new Phase(name, Stats.of(exposures), (int) probes.values().stream().filter(Workload.Probe::presentAtStart).count(),
                probes.size(), (int) probes.values().stream().filter(Workload.Probe::missed).count(),
                (cpuAfter - cpuBefore) * 1000 / Math.max(1, count),
                (cpuAfter - cpuWarmFrom) * 1000 / Math.max(1, count - count / 2));
    }

    /** The containerd figures, and their CPU beside the Docker agent's of the same run. */
    static String render(Result r, Optional<BenchmarkRun.Result> dockerAgent) {
        StringBuilder b = new StringBuilder();
        b.append("== ").append(SUBJECT).append(" (the same probe, image and driver files; pods of one container)\n");
        b.append(String.format("  ready after launch        %d ms%n", r.readyMs()));
        for (Phase p : r.phases()) {
            b.append(String.format("  %s: exposure %s; present at first instruction %d of %d; missed %d%n", p.name(),
                    p.exposure().row("ms"), p.present(), p.total(), p.missed()));
            b.append(String.format("    CPU per container %.2f ms over the phase, %.2f ms warm (its 2nd half)%n",
                    p.cpuPerContainerMs(), p.warmCpuPerContainerMs()));
        }
        b.append(String.format("  RSS peak / steady         %.1f / %.1f MiB%n", r.peakRssMiB(), r.steadyRssMiB()));
        dockerAgent.ifPresent(d -> {
            Phase cri = r.phases().getFirst();
            b.append(String.format("CPU per container, containerd (CRI, at once) / Docker (docker run, one after another):"
                    + " warm %.2f / %.2f ms = %.2fx, over the phase %.2f / %.2f ms (target: no more on containerd)%n",
                    cri.warmCpuPerContainerMs(), d.warmCpuPerContainerMs(),
                    cri.warmCpuPerContainerMs() / Math.max(d.warmCpuPerContainerMs(), 0.001), cri.cpuPerContainerMs(),
                    d.cpuPerContainerMs()));
        });
        return b.toString();
    }
}
