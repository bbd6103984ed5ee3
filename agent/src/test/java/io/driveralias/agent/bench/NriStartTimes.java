package io.driveralias.agent.bench;

import io.driveralias.agent.nri.IndexedNriPlugin;
import io.driveralias.agent.testing.ContainerdHarness;
import io.driveralias.agent.testing.ContainerdVersion;
import io.driveralias.agent.testing.CpuHog;
import io.driveralias.agent.testing.PodCgroup;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * What the agent adds to a pod's start as containerd's NRI plugin ({@code -Dbench.nri=true}). NRI
 * calls its plugins one after another, in index order, and holds the start (and, its lock being
 * node-wide, every other pod's) until each has answered; so the agent is measured against a plugin
 * that answers at once, in its place, on the same containerd, with the same pods and the same
 * load, in alternating blocks (agent, at once, at once, agent, ...). Each block starts
 * {@code pods} GPU pods then {@code pods} ordinary ones, one after another, beside a busy loop on each core.
 *
 * <p>Two figures per start: the kubelet's, the CRI StartContainer call's duration (the task's
 * creation, every plugin's hold, the task's start); and the measured plugin's hold as containerd
 * sees it, bracketed by two plugins of the benchmark's own that answer at once, at index 10 and 90
 * around the measured one at 50: from the first's answer to the second's call. The second
 * excludes runc's time, whose spread under load is larger than the figure measured. The agent
 * starts anew for each of its blocks and serves {@code warmup} pods first, unmeasured.
 */
final class NriStartTimes {

    static final String AGENT = "agent";
    static final String AT_ONCE = "at once";
    private static final Duration PATIENCE = Duration.ofSeconds(60);

    /**
     * @param weights         where the agent and the busy loops run ({@link PodWeights})
     * @param floorInAgentPod the at-once plugin's reading thread weighed as the agent's pod is (where
     *                        the agent has one): what any plugin in the DaemonSet's pod could do at
     *                        best. False: in the benchmark's own cgroup (the runs before 2026-12-03),
     *                        a weight no plugin in that pod would have.
     */
    record Settings(ContainerdVersion release, int rounds, int pods, int warmup, int hogNice, PodWeights weights,
                    boolean floorInAgentPod) {
        Settings(ContainerdVersion release, int rounds, int pods, int warmup, int hogNice) {
            this(release, rounds, pods, warmup, hogNice, PodWeights.SHARED, false);
        }

        static Settings fromSystemProperties() {
            return new Settings(ContainerdVersion.valueOf(System.getProperty("bench.nri.release", "V2_1")),
                    Integer.getInteger("bench.nri.rounds", 4), Integer.getInteger("bench.nri.pods", 30),
                    Integer.getInteger("bench.nri.warmup", 20), Integer.getInteger("bench.nri.hogNice", 0),
                    PodWeights.fromSystemProperties(),
                    Boolean.parseBoolean(System.getProperty("bench.nri.floorInAgentPod", "true")));
        }

        /** Whether the floor's reading thread runs in a pod's cgroup of the agent's request. */
        boolean floorWeighed() {
            return floorInAgentPod && weights.agentInPod();
        }

        /** Where the at-once plugin answers, as the report names it. */
        String floorPlace() {
            return floorWeighed() ? "the at-once plugin's reading thread in a pod's CPU cgroup requesting "
                    + weights.agentCpuRequest() + "m as the agent's" : "the at-once plugin in the benchmark's own cgroup";
        }

        /** The busy loops, as the report names them. */
        String load() {
            return hogNice >= 0 ? "beside " + weights.describeLoops(hogNice) : "no load beside";
        }

        /** Where the agent runs, as the report names it. */
        String agentPlace() {
            return weights.agentPlace();
        }
    }

    /**
     * One start: whose block, GPU or not, the CRI StartContainer call's duration and its three
     * parts: from the call to the first plugin's (the task's creation: shim, runc create), the hold
     * between the plugins around the measured one, from the last plugin's answer to the call's return
     * (the task's start); the CreateContainer call before it; and whether a GPU container's aliases
     * were there at its first instruction. A part is NaN where a plugin did not see the start.
     */
    record Sample(String subject, boolean gpu, double criMs, double createTaskMs, double heldMs, double startTaskMs,
                  double createContainerMs, boolean present) {
    }

    /** The agent's CPU over its measured pods of one kind, all its blocks together, and by thread (ms per pod). */
    record Cpu(double seconds, int pods, Map<String, Double> byThreadMs) {
        double perPodMs() {
            return seconds * 1000 / Math.max(1, pods);
        }
    }

    /** {@code rss}: the agent's RSS, peak and at the end, of each of its blocks (MiB). */
    record Result(Settings settings, String version, List<Sample> samples, Cpu gpuCpu, Cpu plainCpu, List<Double> agentRepairMs,
                  List<Rss> rss, String loadBefore, String loadAfter) {
    }

    record Rss(double peakMiB, double endMiB) {
    }

    private final Settings settings;
    private final ContainerdHarness containerd;
    private final ContainerdWorkload workload;
    private final List<String> jvmOptions;
    private final StartStamps before = new StartStamps();
    private final StartStamps after = new StartStamps();
    private final List<Sample> samples = new ArrayList<>();
    private final List<Double> repairMs = new ArrayList<>();
    private final List<Rss> rss = new ArrayList<>();
    private final CpuCount gpuCpu = new CpuCount();
    private final CpuCount plainCpu = new CpuCount();

    private NriStartTimes(Settings settings, List<String> jvmOptions) {
        this.settings = settings;
        this.containerd = ContainerdHarness.of(settings.release());
        this.workload = new ContainerdWorkload(containerd, Workload.benchDir(), 0);
        this.jvmOptions = jvmOptions;
    }

    static Result run(Settings settings, List<String> jvmOptions) throws Exception {
        return new NriStartTimes(settings, jvmOptions).run();
    }

    /** The agent's options as containerd's NRI plugin on the harness's containerd. */
    static List<String> nriOptions(ContainerdHarness containerd) {
        return List.of("--runtime", "nri", "--nri-socket", containerd.nriSocket().toString(), "--containerd-address",
                containerd.address(), "--containerd-state", containerd.stateDir().toString());
    }

    private Result run() throws Exception {
        String loadBefore = RepairBenchmark.loadAverage();
        try (IndexedNriPlugin first = IndexedNriPlugin.connect(containerd.nriSocket(), "bench-before", "10", before, PATIENCE);
             IndexedNriPlugin last = IndexedNriPlugin.connect(containerd.nriSocket(), "bench-after", "90", after, PATIENCE)) {
            for (int round = 0; round < settings.rounds(); round++) {
                // agent, at once; at once, agent; ...: a drift of the machine's load weighs on both alike.
                boolean agentFirst = round % 2 == 0;
                block(agentFirst);
                block(!agentFirst);
            }
        }
        return new Result(settings, containerd.version(), List.copyOf(samples), gpuCpu.result(), plainCpu.result(),
                List.copyOf(repairMs), List.copyOf(rss), loadBefore, RepairBenchmark.loadAverage());
    }

    private void block(boolean agent) throws Exception {
        if (agent) {
            try (AgentSubject subject = new AgentSubject(jvmOptions, "agent as NRI plugin", nriOptions(containerd));
                 PodCgroup pod = settings.weights().agentPod("daa-bench-agent-" + ProcessHandle.current().pid())) {
                subject.start();
                if (pod != null) {
                    // Once ready, before the pods it serves unmeasured: their JIT compilations run at the pod's weight too, as on a node.
                    pod.add(subject.pid());
                }
                subject.awaitMetric("driver_alias_runtime_up{runtime=\"nri\"}", 1.0, PATIENCE);
                warmUp();
                List<String> measured = measure(AGENT, subject);
                Map<String, Double> repaired = subject.repairMillis();
                measured.stream().map(id -> repaired.get(id.substring(0, 12))).filter(java.util.Objects::nonNull).forEach(repairMs::add);
                rss.add(new Rss(subject.peakRssMiB(), subject.rssMiB()));
            }
        } else {
            // The floor: every call answered from the plugin's reading thread, as the agent answers a container without a GPU ask.
            try (IndexedNriPlugin atOnce = IndexedNriPlugin.connect(containerd.nriSocket(), "bench-at-once", "50", StartStamps.atOnce(),
                    PATIENCE);
                 PodCgroup pod = settings.floorWeighed()
                         ? settings.weights().agentPod("daa-bench-floor-" + ProcessHandle.current().pid()) : null) {
                if (pod != null) {
                    pod.addThread(atOnce.readingThreadId());
                }
                measure(AT_ONCE, null);
            }
        }
    }

    /** Pods the agent serves before it is measured, GPU and not in turn (its own warm-up rounds run at its start). */
    private void warmUp() {
        List<ContainerdWorkload.Started> warm = new ArrayList<>();
        for (int i = 0; i < settings.warmup(); i++) {
            warm.add(workload.timedPod(i % 2 == 0, 0).started());
        }
        workload.remove(warm);
    }

    /** Returns the ids of the GPU containers measured. */
    private List<String> measure(String subject, AgentSubject agent) throws Exception {
        try (CpuHog hog = settings.weights().loops(settings.hogNice())) {
            List<String> gpu = kind(subject, agent, true, gpuCpu);
            kind(subject, agent, false, plainCpu);
            return gpu;
        }
    }

    /**
     * {@code pods} pods of one kind, one after another; the agent's CPU over them until a second
     * after the last one's probe reported (their removal, after, is in no window). Returns their ids.
     */
    private List<String> kind(String subject, AgentSubject agent, boolean gpu, CpuCount cpu) throws Exception {
        before.clear();
        after.clear();
        double cpuFrom = agent == null ? 0 : agent.cpuSeconds();
        Map<String, Double> threadsFrom = agent == null ? Map.of() : agent.threadCpuSeconds();
        List<ContainerdWorkload.TimedStart> starts = new ArrayList<>();
        for (int i = 0; i < settings.pods(); i++) {
            starts.add(workload.timedPod(gpu, 0));
        }
        List<ContainerdWorkload.Started> started = starts.stream().map(ContainerdWorkload.TimedStart::started).toList();
        Map<String, Workload.Probe> probes = workload.probes(started);
        Thread.sleep(1000);
        if (agent != null) {
            cpu.add(agent.cpuSeconds() - cpuFrom, starts.size(), threadsFrom, agent.threadCpuSeconds());
        }
        for (ContainerdWorkload.TimedStart s : starts) {
            String id = s.started().id();
            Optional<StartStamps.Stamp> first = before.of(id);
            Optional<StartStamps.Stamp> last = after.of(id);
            double createTask = first.map(b -> (b.receivedNanos() - s.calledNanos()) / 1e6).orElse(Double.NaN);
            double held = first.flatMap(b -> last.map(a -> (a.receivedNanos() - b.returnedNanos()) / 1e6)).orElse(Double.NaN);
            double startTask = last.map(a -> (s.returnedNanos() - a.returnedNanos()) / 1e6).orElse(Double.NaN);
            Workload.Probe probe = probes.get(id);
            samples.add(new Sample(subject, gpu, s.millis(), createTask, held, startTask, s.createMillis(),
                    probe != null && probe.presentAtStart()));
        }
        workload.remove(started);
        Thread.sleep(1000);
        return started.stream().map(ContainerdWorkload.Started::id).toList();
    }

    /** The agent's CPU summed over blocks. */
    private static final class CpuCount {
        private double seconds;
        private int pods;
        private final Map<String, Double> threadSeconds = new TreeMap<>();

        void add(double cpuSeconds, int count, Map<String, Double> threadsFrom, Map<String, Double> threadsTo) {
            seconds += cpuSeconds;
            pods += count;
            threadsTo.forEach((name, s) -> threadSeconds.merge(name, s - threadsFrom.getOrDefault(name, 0.0), Double::sum));
        }

        Cpu result() {
            Map<String, Double> perPod = new TreeMap<>();
            threadSeconds.forEach((name, s) -> {
                if (s > 0) {
                    perPod.put(name, s * 1000 / Math.max(1, pods));
                }
            });
            return new Cpu(seconds, pods, perPod);
        }
    }
}
