package io.driveralias.agent.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.it.CriProbes.Probe;
import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.BusyNode;
import io.driveralias.agent.testing.ContainerdHarness;
import io.driveralias.agent.testing.ContainerdVersion;
import io.driveralias.agent.testing.CriClient;
import io.driveralias.agent.testing.KubeletProbes;
import io.driveralias.agent.testing.SharedEngines;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.ResourceLock;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The packaged agent as containerd's NRI plugin (containerd 1.7.24 with NRI on, 2.1.9 where it is
 * on by default), beside a busy loop on each core in a pod requesting a whole CPU, the agent weighted
 * as the DaemonSet's CPU request: GPU containers made through the CRI have their
 * aliases and loader cache at their first instruction, the first container whose files the
 * runtime's hook adds after an agent start included; a pod starts whatever the agent does (killed
 * mid-burst, or past its deadline) and is repaired right after; {@code ctr run} containers, which
 * NRI never sees, are served through the events.
 */
@Timeout(600)
@ResourceLock(SharedEngines.CONTAINERD)
class ContainerdNriIT {

    static final int N = 10;

    private static final String NO_DRIVER = "driver_alias_containers_total{outcome=\"no_driver\"}";

    private static AgentProcess agent(ContainerdHarness containerd, String... extra) {
        AgentProcess agent = AgentProcess.startOnContainerd(containerd, extra);
        agent.await("/readyz 200 and the NRI plugin registered", Duration.ofSeconds(60),
                () -> agent.readyz() == 200 && agent.metric("driver_alias_runtime_up{runtime=\"nri\"}") == 1.0);
        return agent;
    }

    /** The releases with NRI on by default (2.x), as CRI-O has it. */
    static java.util.stream.Stream<ContainerdVersion> nriByDefault() {
        return ContainerdVersion.nriReleases().filter(r -> r != ContainerdVersion.V1_7);
    }

    private static CriClient.Spec gpu(String capabilities) {
        return CriProbes.probing().env("NVIDIA_VISIBLE_DEVICES", "all").env("NVIDIA_DRIVER_CAPABILITIES", capabilities);
    }

    @ParameterizedTest
    @MethodSource("io.driveralias.agent.testing.ContainerdVersion#nriReleases")
    void gpuContainersHaveTheirDriverAtTheFirstInstructionThroughTheRuntimesOwnStart(ContainerdVersion release,
                                                                                      @TempDir Path logs)
            throws InterruptedException {
        ContainerdHarness containerd = ContainerdHarness.of(release);
        try (CriProbes cri = new CriProbes(containerd); AgentProcess agent = agent(containerd, "--gpu-runtime", "nvidia");
             BusyNode busy = BusyNode.around(agent.pid()); KubeletProbes kubelet = new KubeletProbes(agent)) {
            // The very first container whose files the nvidia handler's hook adds: nothing learned yet.
            Probe first = cri.pod("nri-hook-first", "nvidia", gpu("compute,utility"));
            List<Probe> declared = new ArrayList<>();
            for (int i = 0; i < N; i++) {
                declared.add(cri.pod("nri-declared-" + i, "", CriProbes.declared(CriProbes.probing())
                        .env("NVIDIA_VISIBLE_DEVICES", "all")));
            }
            List<Probe> hooked = new ArrayList<>();
            for (int i = 0; i < N; i++) {
                hooked.add(cri.pod("nri-hook-" + i, "nvidia", gpu("compute,utility")));
            }
            double noDriver = agent.metric(NO_DRIVER);
            Probe plain = cri.pod("nri-plain", "", CriProbes.probing());
            int firstAtFirst = cri.atFirstInstruction(List.of(first), agent);
            int declaredAtFirst = cri.atFirstInstruction(declared, agent);
            int hookedAtFirst = cri.atFirstInstruction(hooked, agent);
            int before = CriProbes.reportedBeforeStart(agent, declared.stream().map(Probe::shortId).toList());
            cri.firstInstructions(plain);
            kubelet.close();
            System.out.printf("[containerd-nri] %s, %s: the first hook-added container after the agent started %d of 1;"
                    + " declared files %d of %d; hook-added files %d of %d at the first instruction; reported before start %d"
                    + " of %d; the kubelet's probes meanwhile: %s%n", release, busy.describe(), firstAtFirst,
                    declaredAtFirst, N, hookedAtFirst, N, before, N, kubelet.summary());
            // Inside every GPU pod's start, at the pod's weight: the probes still answered.
            assertThat(kubelet.failed()).as("the kubelet's probes on the busy node while the pods started").isEmpty();
            assertThat(firstAtFirst).as("the first hook-added container").isEqualTo(1);
            assertThat(declaredAtFirst).as("declared files at the first instruction").isEqualTo(N);
            assertThat(hookedAtFirst).as("hook-added files at the first instruction").isEqualTo(N);
            assertThat(before).isEqualTo(N);
            assertThat(agent.logLines("repaired container " + plain.shortId())).as("no GPU request, nothing written").isEmpty();
            // Left to NRI from its CreateContainer on: counted once, at its StartContainer, and never again by the
            // event path (whose task-create event comes around the same time).
            agent.await("the plain pod counted", Duration.ofSeconds(30), () -> agent.metric(NO_DRIVER) >= noDriver + 1);
            Thread.sleep(1000);
            assertThat(agent.metric(NO_DRIVER) - noDriver).as("the plain pod counted no_driver once").isEqualTo(1.0);
            assertThat(agent.logLines("WARN")).isEmpty();
            assertThat(agent.logLines("ERROR")).isEmpty();
        }
    }

    /**
     * A runtime whose API the agent does not read (CRI-O, which speaks the same NRI): played by
     * containerd with only its NRI socket given. Every GPU pod at its first instruction beside busy
     * pods, from what NRI's calls tell alone; ready once the runtime has the plugin; a plain pod
     * counted once. On 2.x: NRI alone is for the runtimes that have it on by default.
     */
    @ParameterizedTest
    @MethodSource("nriByDefault")
    void aRuntimeKnownThroughNriAloneHasItsGpuPodsRepairedInsideTheirStart(ContainerdVersion release) throws InterruptedException {
        ContainerdHarness containerd = ContainerdHarness.of(release);
        try (CriProbes cri = new CriProbes(containerd);
             AgentProcess agent = AgentProcess.startOnNriAlone(containerd, "--gpu-runtime", "nvidia");
             BusyNode busy = BusyNode.around(agent.pid())) {
            agent.await("/readyz 200 through NRI alone", Duration.ofSeconds(60),
                    () -> agent.readyz() == 200 && agent.metric("driver_alias_runtime_up{runtime=\"nri\"}") == 1.0);
            assertThat(agent.logLines("containerd.sock")).as("containerd's API is never asked").isEmpty();
            List<Probe> gpu = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                gpu.add(cri.pod("nri-alone-declared-" + i, "", CriProbes.declared(CriProbes.probing())));
                gpu.add(cri.pod("nri-alone-hook-" + i, "nvidia", gpu("compute,utility")));
            }
            double noDriver = agent.metric(NO_DRIVER);
            Probe plain = cri.pod("nri-alone-plain", "", CriProbes.probing());
            int atFirst = cri.atFirstInstruction(gpu, agent);
            cri.firstInstructions(plain);
            System.out.printf("[containerd-nri] %s through NRI alone, %s: %d of %d GPU pods (declared and hook-added files) at"
                    + " the first instruction%n", release, busy.describe(), atFirst, gpu.size());
            assertThat(atFirst).isEqualTo(gpu.size());
            agent.await("the plain pod counted", Duration.ofSeconds(30), () -> agent.metric(NO_DRIVER) >= noDriver + 1);
            Thread.sleep(1000);
            assertThat(agent.metric(NO_DRIVER) - noDriver).as("counted no_driver once").isEqualTo(1.0);
            assertThat(agent.logLines("repaired container " + plain.shortId())).isEmpty();
            assertThat(agent.logLines("ERROR")).isEmpty();
        }
    }

    /** {@code ctr run} never reaches NRI: its GPU containers are the event path's, and are repaired. */
    @ParameterizedTest
    @MethodSource("io.driveralias.agent.testing.ContainerdVersion#nriReleases")
    void ctrRunContainersAreServedThroughTheEvents(ContainerdVersion release, @TempDir Path logs) {
        ContainerdHarness containerd = ContainerdHarness.of(release);
        String image = containerd.debianImage(ContainerdHarness.K8S);
        List<String> ids = new ArrayList<>();
        try (AgentProcess agent = agent(containerd)) {
            for (int i = 0; i < 3; i++) {
                String id = "nri-ctr-" + i + "-" + UUID.randomUUID().toString().substring(0, 8);
                ids.add(containerd.ctrRun(ContainerdHarness.K8S, CriProbes.ctrBinds(), image, id, "sleep", "60"));
            }
            for (String id : ids) {
                agent.awaitLog("repaired container " + id.substring(0, 12), Duration.ofSeconds(30));
            }
        } finally {
            ids.forEach(id -> containerd.remove(ContainerdHarness.K8S, id));
        }
    }

    /**
     * The agent killed in the middle of a burst of pods: containerd starts them without it (a
     * plugin gone is a plugin dropped); a new agent registers again, gets Synchronize and repairs
     * every one. A repair held past a deadline of 1 ms lets the pod start and repairs it right after.
     */
    @ParameterizedTest
    @MethodSource("io.driveralias.agent.testing.ContainerdVersion#nriReleases")
    void podsStartWhateverTheAgentDoesAndAreRepairedRightAfter(ContainerdVersion release) throws Exception {
        ContainerdHarness containerd = ContainerdHarness.of(release);
        try (CriProbes cri = new CriProbes(containerd)) {
            AgentProcess first = agent(containerd);
            ExecutorService kubelet = Executors.newFixedThreadPool(3);
            List<Future<Probe>> pods = new ArrayList<>();
            for (int i = 0; i < 12; i++) {
                String name = "nri-burst-" + i;
                pods.add(kubelet.submit(() -> cri.pod(name, "", CriProbes.declared(CriProbes.probing())
                        .env("NVIDIA_VISIBLE_DEVICES", "all"))));
                if (i == 4) {
                    first.kill();
                }
            }
            List<Probe> started = new ArrayList<>();
            for (Future<Probe> f : pods) {
                started.add(f.get());
            }
            kubelet.shutdown();
            first.close();
            try (AgentProcess again = agent(containerd)) {
                for (Probe p : started) {
                    AgentProcess.awaitTrue("libcuda.so.1 in " + p.name(), Duration.ofSeconds(60),
                            () -> cri.exec(p.id(), "test", "-L", CriProbes.LIB_DIR + "/libcuda.so.1").exitCode() == 0);
                }
                System.out.printf("[containerd-nri] %s: agent killed after 5 of a burst of 12 pods: all 12 started; a new agent"
                        + " registered and has them all repaired%n", release);
            }
            try (AgentProcess hurried = agent(containerd, "--nri-deadline", "1ms")) {
                Probe late = cri.pod("nri-late", "", CriProbes.declared(CriProbes.probing()).env("NVIDIA_VISIBLE_DEVICES", "all"));
                hurried.awaitLog("repaired container " + late.shortId(), Duration.ofSeconds(30));
                double timeouts = hurried.metric("driver_alias_repaired_after_start_total{cause=\"nri_timeout\"}");
                System.out.printf("[containerd-nri] %s: with a deadline of 1 ms the pod started and was repaired (%s); late"
                        + " repairs counted nri_timeout: %.0f%n", release, hurried.logLines("repaired container "
                        + late.shortId()).getFirst().replaceFirst(".*repaired", "repaired"), timeouts);
            }
        }
    }
}
