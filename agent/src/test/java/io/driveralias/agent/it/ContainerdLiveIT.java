package io.driveralias.agent.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.core.LateRepairCause;
import io.driveralias.agent.it.CriProbes.Probe;
import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.BusyNode;
import io.driveralias.agent.testing.ContainerdHarness;
import io.driveralias.agent.testing.ContainerdVersion;
import io.driveralias.agent.testing.CriClient;
import io.driveralias.agent.testing.KubeletProbes;
import io.driveralias.agent.testing.RealDriver.Arch;
import io.driveralias.agent.testing.RealDriver;
import io.driveralias.agent.testing.SharedEngines;
import io.driveralias.agent.testing.TestImages;
import io.driveralias.agent.testing.TreeSnapshot;
import io.driveralias.agent.testing.cri.ContainerState;
import io.driveralias.agent.testing.cri.ContainerStatus;
import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.ResourceLock;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The packaged agent on a containerd node: a private containerd 1.6 with its CRI plugin
 * ({@link ContainerdHarness}), containers made as the kubelet makes them (RunPodSandbox,
 * CreateContainer, then StartContainer at once) and with {@code ctr run}, in the debootstrapped
 * Debian image with NVIDIA's real driver files; each container's first instructions are
 * {@code ldconfig -p | grep libcuda.so.1} (NVIDIA's CUDA images decide there), the real
 * nvidia-smi and cuInit through python's ctypes, read from its CRI log. Driver files declared
 * (CRI mounts), and added by the {@code nvidia} handler's hook in the container's own mount
 * namespace as NVIDIA's legacy hook does. Each test has an agent of its own (what it learns of
 * the runtime's files starts from nothing); the figures are printed as {@code [containerd-live]}.
 * The first-instruction tests run on a {@link BusyNode}: a busy loop on each core in a 1-CPU pod,
 * the agent weighted as the DaemonSet's CPU request.
 */
@Timeout(300)
@ResourceLock(SharedEngines.CONTAINERD)
class ContainerdLiveIT {

    static final int N = 10;
    static ContainerdHarness containerd;

    @BeforeAll
    static void containerd() {
        containerd = ContainerdHarness.get();
        containerd.debianImage(ContainerdHarness.K8S);
    }

    /** The agent's whole log, kept under target/ for a look after the run (its own file is removed at exit). */
    static void keepLog(AgentProcess agent, String test) {
        try {
            Path dir = Files.createDirectories(Path.of("target", "containerd-live"));
            Files.writeString(dir.resolve(test + ".log"), agent.log());
        } catch (IOException | RuntimeException e) {
            System.out.println("[containerd-live] agent log not kept: " + e);
        }
    }

    private final List<AgentProcess> agents = new ArrayList<>();

    @AfterEach
    void stopAgents(TestInfo test) {
        for (AgentProcess agent : agents) {
            keepLog(agent, test.getTestMethod().map(Method::getName).orElse("agent"));
            agent.close();
        }
    }

    /** A new agent (stopped after the test, its log kept), once ready. */
    AgentProcess agent(String... extra) {
        List<String> args = new ArrayList<>(List.of(extra));
        args.addAll(List.of("--log-level", System.getProperty("it.agentLogLevel", "info")));
        AgentProcess agent = AgentProcess.startOnContainerd(containerd, args.toArray(String[]::new));
        agents.add(agent);
        agent.await("/readyz 200", Duration.ofSeconds(60), () -> agent.readyz() == 200);
        return agent;
    }

    static CriClient.Spec gpu(String capabilities) {
        return CriProbes.probing().env("NVIDIA_VISIBLE_DEVICES", "all").env("NVIDIA_DRIVER_CAPABILITIES", capabilities);
    }

    @Test
    void declaredDriverFilesAreThereAtTheFirstInstruction() {
        AgentProcess agent = agent();
        try (CriProbes cri = new CriProbes(containerd); BusyNode busy = BusyNode.around(agent.pid());
             KubeletProbes kubelet = new KubeletProbes(agent)) {
            List<Probe> probes = new ArrayList<>();
            for (int i = 0; i < N; i++) {
                // Half as the device plugin leaves them (the variable set), half with the host's files alone.
                CriClient.Spec spec = CriProbes.declared(CriProbes.probing());
                probes.add(cri.pod("declared-" + i, "", i % 2 == 0 ? spec.env("NVIDIA_VISIBLE_DEVICES", "all") : spec));
            }
            List<Probe> lacking = cri.lackingAtFirstInstruction(probes, agent);
            int before = CriProbes.reportedBeforeStart(agent, probes.stream().map(Probe::shortId).toList());
            kubelet.close();
            System.out.printf("[containerd-live] CRI, declared driver files, %s: the driver listed and loaded at the first"
                    + " instruction in %d of %d; reported repaired before start %d of %d; the kubelet's probes meanwhile: %s%n",
                    busy.describe(), N - lacking.size(), N, before, N, kubelet.summary());
            onlyTheRaceWasLost(agent, cri, lacking);
            // The agent's weight is its pod's, and the probes need a core as the repairs do: never locked out.
            assertThat(kubelet.failed()).as("the kubelet's probes on the busy node while the pods started").isEmpty();
            // "Before start" is what the agent can prove: the process still the runtime's init after
            // its write. Under load that look can come after the program began, and the agent then
            // says "after start" of a container that had its aliases (9 of 10 said so once in CI, 10
            // of 10 had them): printed, not asserted; what is asserted is the truth above.
            assertThat(agent.logLines("WARN")).isEmpty();
        }
    }

    @Test
    void driverFilesTheNvidiaHandlersHookAddsAreThereAtTheFirstInstructionOnceOneContainerShowedThem() throws IOException {
        AgentProcess agent = agent("--gpu-runtime", "nvidia");
        try (CriProbes cri = new CriProbes(containerd); BusyNode busy = BusyNode.around(agent.pid())) {
            Probe first = cri.pod("runtime-added-first", "nvidia", gpu("compute,utility"));
            String firstOut = cri.firstInstructions(first);
            agent.awaitLog("repaired container " + first.shortId(), Duration.ofSeconds(30));
            assertHookMountedInItsOwnNamespace(first);
            boolean firstBeat = CriProbes.cached(firstOut) && CriProbes.loads(firstOut);
            System.out.printf("[containerd-live] CRI, runtime-added files, %s, the first container after the agent started:"
                    + " %s at its first instruction; the agent: %s%n", busy.describe(), firstBeat ? "there" : "NOT there",
                    agent.logLines("repaired container " + first.shortId()).getFirst().replaceFirst(".*repaired", "repaired"));

            List<Probe> later = new ArrayList<>();
            for (int i = 0; i < N; i++) {
                later.add(cri.pod("runtime-added-" + i, "nvidia", gpu("compute,utility")));
            }
            List<Probe> lacking = cri.lackingAtFirstInstruction(later, agent);
            int before = CriProbes.reportedBeforeStart(agent, later.stream().map(Probe::shortId).toList());
            System.out.printf("[containerd-live] CRI, runtime-added files, the next ones: the driver listed and loaded"
                    + " at the first instruction in %d of %d; reported repaired before start %d of %d%n", N - lacking.size(), N,
                    before, N);
            onlyTheRaceWasLost(agent, cri, lacking);
            // "Before start" printed, not asserted: see declaredDriverFilesAreThereAtTheFirstInstruction.

            // NVML only: the runtime adds NVML alone; aliases for that, nothing else.
            Probe utility = cri.pod("utility-1", "nvidia", gpu("utility"));
            agent.awaitLog("repaired container " + utility.shortId(), Duration.ofSeconds(30));
            Probe utilityNext = cri.pod("utility-2", "nvidia", gpu("utility"));
            assertThat(cri.firstInstructions(utilityNext)).as("nvidia-smi at the first instruction")
                    .contains("nvidia-smi=").doesNotContain("nvidia-smi=" + RealContainers.NVML_NOT_FOUND)
                    .doesNotContain("nvidia-smi=127");
            agent.awaitLog("repaired container " + utilityNext.shortId() + " .* before start", Duration.ofSeconds(30));
            assertThat(cri.exec(utilityNext.id(), "sh", "-c", "ls " + CriProbes.LIB_DIR + " | grep -cE 'nvidia|cuda'")
                    .output().trim()).as("libnvidia-ml.so.1 and its file, no alias to a file that never came").isEqualTo("2");

            // NVIDIA_VISIBLE_DEVICES=void under the nvidia handler: no files, no GPU request, nothing written.
            Probe voided = cri.pod("void", "nvidia", CriProbes.probing().env("NVIDIA_VISIBLE_DEVICES", "void"));
            assertThat(cri.firstInstructions(voided)).contains("nvidia-smi=127").contains("cache=no");
            assertThat(cri.exec(voided.id(), "ls", CriProbes.LIB_DIR).output()).doesNotContain("libcuda").doesNotContain("libnvidia");
            assertThat(agent.logLines("repaired container " + voided.shortId())).isEmpty();
            assertThat(agent.logLines("WARN")).isEmpty();
            assertThat(agent.logLines("ERROR")).isEmpty();
        }
    }

    /**
     * containerd 1.6 has no NRI: there the repair before the first instruction is a race the agent
     * wins by being early (the writable layer at the create, some 170 ms ahead of the start; the
     * container's own root at {@code /tasks/create}, some 6 ms ahead of its first instruction), as
     * the README's runtime table says. Beside the busy loops it won 10 of 10 in most CI runs, and 9
     * of 10 once, with another IT class running beside it. What holds whatever the load is asserted
     * here: every container that lacked its driver at its first instruction was repaired with its
     * cache, never said "before start", and was counted late for that race ({@code missed_create},
     * {@code slow_create} and their kin), not for a fault (a permission, a kernel, unreadable layers);
     * and the README's target, at least 99 % at the first instruction, as ten containers can test
     * it: at most one lacking (a node that meets the target fails this one run in 230; an early path
     * that broke leaves most of them lacking). How many won is printed (above); where the runtime
     * holds the start for the agent (NRI, {@link ContainerdNriIT}: the same pods on the same busy
     * node) every one is asserted at its first instruction.
     */
    private static void onlyTheRaceWasLost(AgentProcess agent, CriProbes cri, List<Probe> lacking) {
        assertThat(lacking).as("lacking their driver at the first instruction, of " + N + " (target >= 99 %)").hasSizeLessThanOrEqualTo(1);
        for (Probe p : lacking) {
            AgentProcess.awaitTrue("aliases and cache in " + p.name(), Duration.ofSeconds(30), () -> cri.repairedWithCache(p.id()));
            assertThat(agent.logLines("repaired container " + p.shortId() + " (")).as("said before start of " + p.shortId()
                    + ", which lacked its driver at its first instruction").noneMatch(l -> l.contains(") before start"));
        }
        // The causes a lost race leaves, by how far it was lost: the create's work not begun, begun
        // against a root being mounted, done after the process was made, or finished by the start.
        double race = Stream.of(LateRepairCause.MISSED_CREATE, LateRepairCause.MOUNT_TIMEOUT, LateRepairCause.LAYERS,
                        LateRepairCause.SLOW_CREATE, LateRepairCause.INCOMPLETE)
                .mapToDouble(c -> agent.metric("driver_alias_repaired_after_start_total{cause=\"" + c.label() + "\"}")).sum();
        assertThat(race).as("late repairs counted for the race, not for a fault: " + agent.metrics())
                .isGreaterThanOrEqualTo(lacking.size());
    }

    /**
     * What the hook did is what NVIDIA's legacy hook does: the driver's files are mounts of the
     * container's own mount table, the spec has none, and the host sees empty placeholders.
     */
    private static void assertHookMountedInItsOwnNamespace(Probe probe) throws IOException {
        String versioned = "libcuda.so." + RealDriver.version(Arch.AMD64);
        int pid = containerd.taskPid(ContainerdHarness.K8S, probe.id());
        assertThat(Files.readString(Path.of("/proc", Integer.toString(pid), "mountinfo")))
                .as("the container's own mount table").contains(" " + CriProbes.LIB_DIR + "/" + versioned + " ");
        assertThat(containerd.run("-n", ContainerdHarness.K8S, "containers", "info", probe.id()))
                .as("its spec").contains("NVIDIA_VISIBLE_DEVICES=all").doesNotContain(versioned);
        Path placeholder = containerd.stateDir().resolve("io.containerd.runtime.v2.task/" + ContainerdHarness.K8S + "/"
                + probe.id() + "/rootfs" + CriProbes.LIB_DIR + "/" + versioned);
        assertThat(Files.size(placeholder)).as("what the host sees at " + placeholder).isZero();
    }

    /**
     * {@code ctr run}: its task's start follows its create within some 90 ms, and only the events
     * tell the agent of either (containerd 1.6 has no NRI; {@code ctr} never reaches NRI). What the
     * README promises there: every GPU container repaired, at its first instruction where the
     * create's work beat the start (on a busy node some are repaired a few ms after it, counted
     * {@code slow_create}), and "before start" said of none that lacked its aliases at its first
     * instruction. The share at the first instruction is printed; under the CRI (the kubelet's
     * path, above) the start follows later and every container is asserted at its first instruction.
     */
    @Test
    void ctrRunWithBindsOfTheDriverFiles(@TempDir Path logs) {
        List<String> ids = new ArrayList<>();
        AgentProcess agent = agent();
        try (BusyNode busy = BusyNode.around(agent.pid())) {
            String image = containerd.debianImage(ContainerdHarness.K8S);
            for (int i = 0; i < N; i++) {
                String id = "ctr-run-" + i + "-" + UUID.randomUUID().toString().substring(0, 8);
                List<String> options = new ArrayList<>(CriProbes.ctrBinds());
                options.addAll(List.of("--log-uri", "file://" + logs.resolve(id + ".log")));
                ids.add(containerd.ctrRun(ContainerdHarness.K8S, options, image, id,
                        RealContainers.FIRST_INSTRUCTIONS.toArray(String[]::new)));
            }
            int atFirst = 0;
            List<String> lacked = new ArrayList<>();
            for (String id : ids) {
                Path log = logs.resolve(id + ".log");
                AgentProcess.awaitTrue("the first instructions of " + id, Duration.ofSeconds(60),
                        () -> Files.isRegularFile(log) && read(log).contains("end\n"));
                if (CriProbes.cached(read(log)) && CriProbes.loads(read(log))) {
                    atFirst++;
                } else {
                    lacked.add(id.substring(0, 12));
                    CriProbes.missed(id.substring(0, 12), read(log), agent);
                }
            }
            // Every one repaired (reportedBeforeStart waits for each one's line).
            int before = CriProbes.reportedBeforeStart(agent, ids.stream().map(id -> id.substring(0, 12)).toList());
            System.out.printf("[containerd-live] ctr run with binds, %s: the driver listed and loaded at the first instruction"
                    + " in %d of %d; reported repaired before start %d of %d%n", busy.describe(), atFirst, N, before, N);
            for (String shortId : lacked) {
                assertThat(agent.logLines("repaired container " + shortId + " (")).as("said before start of " + shortId
                        + ", which lacked its aliases at its first instruction").noneMatch(l -> l.contains(") before start"));
            }
            assertThat(agent.logLines("WARN")).as(agent.log()).isEmpty();
            assertThat(agent.logLines("ERROR")).as(agent.log()).isEmpty();
        } finally {
            ids.forEach(id -> containerd.remove(ContainerdHarness.K8S, id));
        }
    }

    /**
     * containerd {@code kill -9}ed after {@code K} of a burst of {@code BURST} pods (three at a time,
     * as a kubelet's workers), restarted a second later; the kubelet's retries (a failed create is
     * made again under a new attempt, a failed start started again) go on. Every container running
     * at the end has its aliases and its cache; the agent is ready soon after containerd answers.
     */
    @Test
    void containerdKilledMidBurstAndRestartedMissesNothing() throws Exception {
        killedMidBurst(containerd, agent());
    }

    /** The same on containerd 1.7 and 2.1, the agent their NRI plugin: dropped with containerd, registered again after. */
    @ParameterizedTest
    @EnumSource(value = ContainerdVersion.class, names = {"V1_7", "V2_1"})
    void containerdKilledMidBurstAndRestartedMissesNothingThroughNri(ContainerdVersion release) throws Exception {
        ContainerdHarness other = ContainerdHarness.of(release);
        AgentProcess agent = AgentProcess.startOnContainerd(other, "--log-level", "info");
        agents.add(agent);
        agent.await("/readyz 200", Duration.ofSeconds(60), () -> agent.readyz() == 200);
        killedMidBurst(other, agent);
        AgentProcess.awaitTrue("the NRI plugin registered again", Duration.ofSeconds(30),
                () -> agent.metric("driver_alias_runtime_up{runtime=\"nri\"}") == 1.0);
    }

    private static void killedMidBurst(ContainerdHarness containerd, AgentProcess agent) throws Exception {
        int burst = 12;
        int killAfter = 4;
        try (CriProbes cri = new CriProbes(containerd)) {
            AtomicInteger started = new AtomicInteger();
            ExecutorService kubelet = Executors.newFixedThreadPool(3);
            List<Future<Probe>> pods = new ArrayList<>();
            for (int i = 0; i < burst; i++) {
                String name = "burst-" + i;
                pods.add(kubelet.submit(() -> {
                    Probe p = cri.podRetrying(name, CriProbes.declared(CriProbes.probing()), Duration.ofSeconds(90));
                    started.incrementAndGet();
                    return p;
                }));
            }
            AgentProcess.awaitTrue(killAfter + " pods started", Duration.ofSeconds(60), () -> started.get() >= killAfter);
            containerd.kill();
            int startedAtKill = started.get();
            AgentProcess.awaitTrue("the agent not ready while containerd is away", Duration.ofSeconds(5),
                    () -> agent.readyz() == 503);
            Thread.sleep(1000);
            containerd.start();
            long answering = System.nanoTime();
            AgentProcess.awaitTrue("/readyz 200 after containerd answers", Duration.ofSeconds(30), () -> agent.readyz() == 200);
            long readyMs = (System.nanoTime() - answering) / 1_000_000;
            System.out.printf("[containerd-live] containerd %s kill -9 after %d of %d CRI pods started, restarted 1 s later:"
                    + " /readyz 200 %d ms after containerd answered%n", containerd.release(), startedAtKill, burst, readyMs);
            List<Probe> probes = new ArrayList<>();
            for (Future<Probe> f : pods) {
                probes.add(f.get(120, TimeUnit.SECONDS));
            }
            kubelet.shutdown();
            int restarted = 0;
            for (int i = 0; i < probes.size(); i++) {
                // A container whose start was under way when containerd died may have exited with it: the
                // kubelet starts it again, and so does this test (it must be repaired as any other).
                ContainerStatus status = cri.cri().containerStatus(probes.get(i).id());
                if (status.getState() != ContainerState.CONTAINER_RUNNING) {
                    System.out.printf("[containerd-live] %s %s (exit %d, %s) across the restart: started again%n",
                            probes.get(i).pod().pod().name(), status.getState(), status.getExitCode(), status.getReason());
                    probes.set(i, cri.run(probes.get(i).pod(), "main-" + ++restarted, CriProbes.declared(CriProbes.probing())));
                }
            }
            int missed = 0;
            for (Probe p : probes) {
                try {
                    AgentProcess.awaitTrue("aliases and cache in " + p.name(), Duration.ofSeconds(30), () -> cri.repairedWithCache(p.id()));
                } catch (AssertionError e) {
                    missed++;
                    CriProbes.missed(p.shortId(), cri.cri().logs(p.pod(), p.name()), agent);
                }
            }
            // What each printed at its first instruction, where its CRI log kept it: containerd writes
            // the log, and what a container wrote while it was away may be lost.
            int atFirst = 0;
            int logged = 0;
            for (Probe p : probes) {
                String out = cri.cri().logs(p.pod(), p.name());
                logged += out.contains("end\n") ? 1 : 0;
                atFirst += CriProbes.cached(out) && CriProbes.loads(out) ? 1 : 0;
            }
            System.out.printf("[containerd-live] across the containerd restart: repaired with cache %d of %d (missed %d);"
                    + " the driver at the first instruction %d of the %d whose log kept it%n", burst - missed, burst, missed,
                    atFirst, logged);
            assertThat(missed).as("missed across the restart (target 0)").isZero();
            assertThat(readyMs).as("ready within 2 s of the socket answering").isLessThanOrEqualTo(2000);
        }
    }

    /**
     * The hostile cases that apply on containerd, one agent for all: a container without a GPU
     * request whose binds are copies of the driver under a library-shaped path (an emptyDir's
     * {@code subPath}), and a GPU pod's sandbox, are never written; a GPU container whose image's
     * library directory is a symlink leading out of its root is repaired in-root, and a sentinel
     * directory on the host (the symlink's target there, holding hard links of the host's own driver
     * files) is left exactly as it was.
     */
    @Test
    void hostileContainersAreNeverWrittenAndNothingOutsideTheirRoot(@TempDir Path tmp) throws IOException {
        Path sentinel = Files.createDirectories(tmp.resolve("sentinel"));
        for (String file : TestImages.DRIVER.keySet()) {
            Files.createLink(sentinel.resolve(file), TestImages.driverDir().resolve(file));
        }
        Files.writeString(sentinel.resolve("victim"), "host data");
        Map<String, String> sentinelBefore = TreeSnapshot.of(sentinel);
        try (CriProbes cri = new CriProbes(containerd)) {
            AgentProcess agent = agent("--gpu-runtime", "nvidia");

            // Copies of the driver (same names, other inodes) from a directory shaped like a library directory.
            Path volume = Files.createDirectories(tmp.resolve("pods/uid/volumes/kubernetes.io~empty-dir/libs/x86_64-linux-gnu"));
            CriClient.Spec copies = CriProbes.probing();
            for (Path lib : RealDriver.versionedLibraries(Arch.AMD64)) {
                Path copy = Files.copy(lib, volume.resolve(lib.getFileName()));
                copies = copies.bind(copy.toString(), CriProbes.LIB_DIR + "/" + lib.getFileName(), true);
            }
            double noDriver = agent.metric("driver_alias_containers_total{outcome=\"no_driver\"}");
            Probe neighbour = cri.pod("copies", "", copies);
            assertThat(cri.firstInstructions(neighbour)).contains("cache=no");
            agent.await("the neighbour examined", Duration.ofSeconds(30),
                    () -> agent.metric("driver_alias_containers_total{outcome=\"no_driver\"}") > noDriver);

            // A GPU pod: its container repaired, its sandbox never.
            Probe gpu = cri.pod("gpu-sandbox", "nvidia", gpu("compute,utility"));
            agent.awaitLog("repaired container " + gpu.shortId(), Duration.ofSeconds(30));
            Path sandboxLayer = containerd.upperDir(ContainerdHarness.K8S, gpu.pod().id());

            // The image's /usr/lib64 is an absolute symlink to the sentinel's host path: in the container, its own.
            String lib64 = containerd.image(ContainerdHarness.K8S, "lib64-to-host-cri", TestImages.RHEL_LIB, root -> {
                Files.delete(root.resolve("usr/lib64/ld-linux-x86-64.so.2"));
                Files.delete(root.resolve("usr/lib64"));
                Files.createSymbolicLink(root.resolve("usr/lib64"), sentinel);
                Files.createDirectories(root.resolve(sentinel.toString().substring(1)));
                Files.createSymbolicLink(root.resolve(sentinel.toString().substring(1)).resolve("ld-linux-x86-64.so.2"),
                        Path.of("/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"));
            }, "/bin/sh");
            CriClient.Spec standIn = CriClient.Spec.of("sleep", "600");
            for (String file : TestImages.DRIVER.keySet()) {
                standIn = standIn.bind(TestImages.driverDir().resolve(file).toString(), TestImages.RHEL_LIB + "/" + file, true);
            }
            Probe symlinked = cri.run(cri.pod("lib64-symlink", ""), "main", lib64, standIn);
            AgentProcess.awaitTrue("libcuda.so.1 in-root", Duration.ofSeconds(30), () -> ("libcuda.so." + TestImages.VERSION)
                    .equals(cri.exec(symlinked.id(), "readlink", TestImages.RHEL_LIB + "/libcuda.so.1").output().trim()));
            AgentProcess.awaitTrue("nvidia-smi in " + symlinked.name(), Duration.ofSeconds(30),
                    () -> cri.exec(symlinked.id(), "nvidia-smi").exitCode() == 0);

            assertThat(cri.exec(neighbour.id(), "sh", "-c", "ls -A " + CriProbes.LIB_DIR + " | grep -E '^lib(cuda|nvidia-ml)\\.so\\.1$';"
                    + " ldconfig -p | grep -E 'libcuda|libnvidia'; true").output()).as("the neighbour: no alias, no cache entry").isEmpty();
            assertThat(agent.logLines("repaired container " + neighbour.shortId())).isEmpty();
            try (Stream<Path> written = Files.walk(sandboxLayer)) {
                assertThat(written.filter(f -> Files.isSymbolicLink(f) || f.getFileName().toString().startsWith("ld.so.cache")
                        || f.getFileName().toString().contains(".so")).toList()).as("the sandbox's writable layer").isEmpty();
            }
            assertThat(agent.logLines("repaired container " + gpu.pod().id().substring(0, 12))).isEmpty();
            assertThat(TreeSnapshot.of(sentinel)).as("host sentinel").isEqualTo(sentinelBefore);
            assertThat(agent.isAlive()).isTrue();
        }
    }

    static String read(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            return "";
        }
    }
}
