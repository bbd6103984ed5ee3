package io.driveralias.agent.bench;

import io.driveralias.agent.testing.ContainerdHarness;
import io.driveralias.agent.testing.DockerHarness;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The agent's memory and CPU watching Docker and containerd together, through containerd's events
 * as before NRI and as containerd's NRI plugin ({@code -Dbench.nri=true}): two agents one after the
 * other, each given the same workload on the same Docker and containerd, no load beside it. Warm-up
 * ({@code warmupDocker} {@code docker run}, {@code warmupPods} CRI pods), then, each measured alone,
 * {@code containers} {@code docker run} one after another, as many GPU pods through the CRI, as
 * many ordinary pods, twice as many pod sandboxes alone; RSS five seconds after the last. Each phase's CPU runs from its first start
 * to a second after its last container's probe reported; removals fall in no phase. The Docker
 * phase is the Docker path's figure, in the same process as the NRI path's.
 */
final class NriFootprint {

    static final String EVENTS = "Docker + containerd (events)";
    static final String NRI = "Docker + containerd + NRI";
    static final String DOCKER_RUN = "docker run";
    static final String GPU_POD = "CRI GPU pod";
    static final String PLAIN_POD = "CRI pod, no GPU";
    static final String SANDBOX = "CRI sandbox alone";

    record Settings(int warmupDocker, int warmupPods, int containers) {
        static Settings fromSystemProperties() {
            return new Settings(Integer.getInteger("bench.nri.footprint.warmupDocker", 100),
                    Integer.getInteger("bench.nri.footprint.warmupPods", 40),
                    Integer.getInteger("bench.nri.footprint.containers", 150));
        }
    }

    /** One phase's CPU (seconds over {@code count} containers, and by thread in ms per container) and its GPU pods at their first instruction. */
    record Phase(String name, int count, double cpuSeconds, Map<String, Double> byThreadMs, int present, int gpu) {
        double perContainerMs() {
            return cpuSeconds * 1000 / Math.max(1, count);
        }
    }

    /** {@code memory}: where the steady RSS is ({@link AgentSubject#memory()}). */
    record Subject(String name, List<Phase> phases, double peakRssMiB, double steadyRssMiB, int containers, String memory) {
        Phase phase(String phase) {
            return phases.stream().filter(p -> p.name().equals(phase)).findFirst().orElseThrow();
        }
    }

    record Result(Settings settings, List<Subject> subjects, String loadBefore, String loadAfter) {
    }

    @FunctionalInterface
    private interface Starts {
        List<ContainerdWorkload.Started> start(int count) throws Exception;
    }

    private NriFootprint() {
    }

    static Result run(Settings settings, DockerHarness docker, ContainerdHarness containerd, List<String> jvmOptions) throws Exception {
        String loadBefore = RepairBenchmark.loadAverage();
        Workload dockerWorkload = new Workload(docker, Workload.benchDir(), 15);
        ContainerdWorkload pods = new ContainerdWorkload(containerd, Workload.benchDir(), 0);
        List<String> containerdAt = List.of("--containerd-address", containerd.address(), "--containerd-state",
                containerd.stateDir().toString());
        List<Subject> subjects = new ArrayList<>();
        List<String> events = new ArrayList<>(List.of("--docker-host", docker.host(), "--runtime", "docker", "--runtime", "containerd"));
        events.addAll(containerdAt);
        subjects.add(subject(EVENTS, events, false, settings, dockerWorkload, pods, jvmOptions));
        List<String> nri = new ArrayList<>(List.of("--docker-host", docker.host(), "--runtime", "docker", "--runtime", "nri",
                "--nri-socket", containerd.nriSocket().toString()));
        nri.addAll(containerdAt);
        subjects.add(subject(NRI, nri, true, settings, dockerWorkload, pods, jvmOptions));
        return new Result(settings, subjects, loadBefore, RepairBenchmark.loadAverage());
    }

    private static Subject subject(String name, List<String> options, boolean nri, Settings settings, Workload docker,
                                   ContainerdWorkload pods, List<String> jvmOptions) throws Exception {
        try (AgentSubject agent = new AgentSubject(jvmOptions, name, options)) {
            agent.start();
            if (nri) {
                agent.awaitMetric("driver_alias_runtime_up{runtime=\"nri\"}", 1.0, Duration.ofSeconds(60));
            }
            List<String> warm = docker.sequential(settings.warmupDocker());
            docker.probes(warm.isEmpty() ? List.of() : List.of(warm.getLast()));
            docker.remove(warm);
            List<ContainerdWorkload.Started> warmPods = new ArrayList<>();
            for (int i = 0; i < settings.warmupPods(); i++) {
                warmPods.add(pods.timedPod(i % 2 == 0, 0).started());
            }
            pods.remove(warmPods);
            Thread.sleep(1000);
            int n = settings.containers();
            List<Phase> phases = new ArrayList<>();
            phases.add(phase(DOCKER_RUN, agent, false, () -> {
                List<String> ids = docker.sequential(n);
                docker.probes(List.of(ids.getLast()));
                return ids;
            }, docker::remove));
            phases.add(podPhase(GPU_POD, agent, count -> gpuOrNot(pods, count, true), pods, n));
            phases.add(podPhase(PLAIN_POD, agent, count -> gpuOrNot(pods, count, false), pods, n));
            // A pod's sandbox alone, twice as many (each costs less): what the pods' figures above include of it.
            phases.add(phase(SANDBOX, agent, false, () -> pods.sandboxes(2 * n), pods::removePods));
            Thread.sleep(5000);
            return new Subject(name, phases, agent.peakRssMiB(), agent.rssMiB(), settings.warmupDocker() + settings.warmupPods() + 3 * n,
                    agent.memory());
        }
    }

    private static List<ContainerdWorkload.Started> gpuOrNot(ContainerdWorkload pods, int count, boolean gpu) {
        List<ContainerdWorkload.Started> started = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            started.add(pods.timedPod(gpu, 0).started());
        }
        return started;
    }

    private static Phase podPhase(String name, AgentSubject agent, Starts starts, ContainerdWorkload pods, int n) throws Exception {
        Map<String, Workload.Probe> seen = new LinkedHashMap<>();
        Phase phase = phase(name, agent, name.equals(GPU_POD), () -> {
            List<ContainerdWorkload.Started> started = starts.start(n);
            seen.putAll(pods.probes(started));
            return started;
        }, pods::remove);
        int present = (int) seen.values().stream().filter(Workload.Probe::presentAtStart).count();
        return new Phase(phase.name(), n, phase.cpuSeconds(), phase.byThreadMs(), name.equals(GPU_POD) ? present : 0, phase.gpu());
    }

    @FunctionalInterface
    private interface Work<T> {
        List<T> run() throws Exception;
    }

    @FunctionalInterface
    private interface Removal<T> {
        void remove(List<T> started);
    }

    private static <T> Phase phase(String name, AgentSubject agent, boolean gpu, Work<T> work, Removal<T> removal) throws Exception {
        double from = agent.cpuSeconds();
        Map<String, Double> threadsFrom = agent.threadCpuSeconds();
        List<T> started = work.run();
        Thread.sleep(1000);
        double cpu = agent.cpuSeconds() - from;
        Map<String, Double> byThread = new TreeMap<>();
        agent.threadCpuSeconds().forEach((thread, seconds) -> {
            double ms = (seconds - threadsFrom.getOrDefault(thread, 0.0)) * 1000 / Math.max(1, started.size());
            if (ms > 0) {
                byThread.put(thread, ms);
            }
        });
        removal.remove(started);
        Thread.sleep(1000);
        return new Phase(name, started.size(), cpu, byThread, 0, gpu ? started.size() : 0);
    }
}
