package io.driveralias.agent.live;

import static io.driveralias.agent.live.FakeAgentMetrics.await;
import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.kube.PodEvents;
import io.driveralias.agent.nri.FakeNriRuntime;
import io.driveralias.agent.nri.NriContainer;
import io.driveralias.agent.nri.NriInputs;
import io.driveralias.agent.nri.NriPlugin;
import io.driveralias.agent.nri.NriSync;
import io.driveralias.agent.testing.nri.Container;
import io.driveralias.agent.testing.nri.CreateContainerRequest;
import io.driveralias.agent.testing.nri.PodSandbox;
import io.driveralias.agent.nri.NriPod;
import io.driveralias.agent.nri.NriRuntimeInfo;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * On an NRI node, what NRI's CreateContainer shows of a container decides whether the event path
 * describes it: one that asks for no GPU is left to NRI (no description at its create or its task's,
 * counted once at its StartContainer), one that may is seeded as on any node, and while NRI is away
 * every container is the event path's again.
 */
@Timeout(30)
class NriPlainTest {

    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final NriPod POD = new NriPod("s", "p", "u", "ns", "", 0);
    /** When every plain container's process started, as the kernel and the runtime both say. */
    private static final Instant STARTED = Instant.parse("2026-12-02T01:00:00Z");

    @TempDir
    Path dir;

    private final FakeRuntime containerd = new FakeRuntime("containerd");
    private final FakeAgentMetrics metrics = new FakeAgentMetrics();
    private ContainerFixtures fixtures;
    private Agent agent;
    private NriStarts nri;

    @BeforeEach
    void setUp() throws Exception {
        fixtures = new ContainerFixtures(dir);
        agent = new Agent(List.of(new Agent.Watched(containerd, new RuntimeEvents(containerd), fixtures.repairer(containerd, null))),
                new ExaminationReporter(metrics, PodEvents.NOOP), metrics, Clock.systemUTC(), 2, Duration.ofHours(1),
                Duration.ofSeconds(2), new Agent.Tuning(100, Duration.ZERO, 0, Duration.ofMillis(20)), Optional.empty());
        agent.start();
        await("ready", WAIT, agent::ready);
        nri = new NriStarts(agent, "containerd", Set.of(), new NriStarts.DriverPaths(path -> false, path -> false), Clock.systemUTC(),
                pid -> Optional.of(STARTED), Optional.empty());
        nri.connected(new NriRuntimeInfo("containerd", "v2.1.9", "", Duration.ofSeconds(2)));
    }

    @AfterEach
    void stop() {
        agent.close();
    }

    private static NriContainer nriContainer(String id, int pid, List<String> nvidiaEnv) {
        return new NriContainer(id, "s", "main", "", NriContainer.State.CREATED, pid, Map.of(), Map.of(), nvidiaEnv, List.of(), false, false, 0,
                false);
    }

    private ContainerInfo plainContainer() {
        ContainerInfo c = ContainerInfo.builder(ContainerFixtures.newId()).name("plain").image("busybox").running(true).pid(4242)
                .startedAt(Optional.of(STARTED)).build();
        containerd.put(c);
        return c;
    }

    @Test
    void aContainerWithoutAGpuAskAtItsCreateIsNeverDescribedAndCountedOnceAtItsStart() throws Exception {
        ContainerInfo c = plainContainer();

        nri.createContainer(POD, nriContainer(c.id(), 0, List.of()));
        containerd.emit(c.id(), "create", "");
        containerd.emit(c.id(), "task-create", "");
        NriContainer starting = nriContainer(c.id(), 4242, List.of());
        assertThat(nri.wantsStart(POD, starting)).as("answered from the plugin's reading thread").isFalse();
        nri.answeredAtOnce(POD, starting);
        // containerd's events are asynchronous: its task's may come after NRI's StartContainer.
        containerd.emit(c.id(), "task-create", "");

        await("counted", WAIT, () -> metrics.examined().size() == 1);
        agent.reconcile(false);
        Thread.sleep(300);
        assertThat(metrics.examined()).containsExactly(ContainerOutcome.NO_DRIVER);
        assertThat(containerd.inspects(c.id())).as("no description: NRI's call said it all").isZero();

        // containerd restarted (NRI gone, the event stream back): the full reconcile describes it, and knows this start.
        nri.disconnected("containerd restarted");
        agent.reconcile(true);
        await("described by the full reconcile", WAIT, () -> containerd.inspects(c.id()) > 0);
        Thread.sleep(300);
        assertThat(metrics.examined()).as("the same start, counted once").containsExactly(ContainerOutcome.NO_DRIVER);
    }

    @Test
    void aReconcileBetweenItsTaskAndItsStartLeavesItToNri() throws Exception {
        // Seen under load in ContainerdNriIT: a resync listed the plain container while NRI held its
        // start (its task created, its process there), described it and counted it; NRI's start counted it again.
        ContainerInfo c = plainContainer();
        nri.createContainer(POD, nriContainer(c.id(), 0, List.of()));
        containerd.emit(c.id(), "create", "");
        containerd.emit(c.id(), "task-create", "");

        agent.reconcile(false);
        Thread.sleep(300);
        assertThat(nri.wantsStart(POD, nriContainer(c.id(), 4242, List.of()))).isFalse();
        nri.answeredAtOnce(POD, nriContainer(c.id(), 4242, List.of()));

        await("counted", WAIT, () -> metrics.examined().size() == 1);
        agent.reconcile(false);
        Thread.sleep(300);
        assertThat(metrics.examined()).as("counted once, by NRI").containsExactly(ContainerOutcome.NO_DRIVER);
        assertThat(containerd.inspects(c.id())).as("never described").isZero();
    }

    @Test
    void aContainerShowingAGpuAskAtItsCreateIsTheEventPathsAsOnAnyNode() throws Exception {
        ContainerInfo c = fixtures.gpuContainer(ContainerFixtures.newId(), Instant.now());
        containerd.put(c);

        nri.createContainer(POD, nriContainer(c.id(), 0, List.of("NVIDIA_VISIBLE_DEVICES=all")));
        containerd.emit(c.id(), "task-create", "");

        await("repaired through the event path", WAIT, () -> metrics.examined().contains(ContainerOutcome.REPAIRED));
        assertThat(containerd.inspects(c.id())).isPositive();
    }

    @Test
    void whileNriIsAwayEveryContainerIsTheEventPathsAgainAndOneAnnouncedBeforeIsFoundByTheReconcile() throws Exception {
        ContainerInfo announced = plainContainer();
        nri.createContainer(POD, nriContainer(announced.id(), 0, List.of()));
        nri.disconnected("containerd restarted");

        containerd.emit(announced.id(), "task-create", "");
        await("described by the event path", WAIT, () -> metrics.examined().size() == 1);
        assertThat(metrics.examined()).containsExactly(ContainerOutcome.NO_DRIVER);
        assertThat(containerd.inspects(announced.id())).isPositive();

        // Back: announced, then the connection lost before its start: the reconcile after Synchronize finds it.
        nri.connected(new NriRuntimeInfo("containerd", "v2.1.9", "", Duration.ofSeconds(2)));
        ContainerInfo lost = plainContainer();
        nri.createContainer(POD, nriContainer(lost.id(), 0, List.of()));
        containerd.emit(lost.id(), "task-create", "");
        Thread.sleep(200);
        assertThat(containerd.inspects(lost.id())).isZero();
        nri.disconnected("dropped after a timeout");
        agent.reconcile(false);
        await("found by the reconcile", WAIT, () -> containerd.inspects(lost.id()) > 0 && metrics.examined().size() == 2);
    }

    /** Found: every Synchronize queued a full reconcile of its own, on an unbounded queue. */
    @Test
    void aRuntimeThatSynchronizesInALoopCostsOneReconcileAtATime() throws Exception {
        int before = containerd.lists();
        java.util.concurrent.CountDownLatch gate = containerd.holdLists();
        NriSync last = new NriSync(List.of(), List.of(), true, 0);
        nri.synchronize(last);
        await("a reconcile held in its list", WAIT, () -> containerd.listsWaiting() == 1);

        for (int i = 0; i < 20_000; i++) {
            nri.synchronize(last);
        }
        gate.countDown();

        await("the one queued meanwhile ran", WAIT, () -> containerd.lists() - before >= 2);
        Thread.sleep(500);
        assertThat(containerd.lists() - before).as("the one running, and one for all that came during it").isEqualTo(2);
    }

    /** Found: container ids of 4 KiB keyed the agent's bookkeeping (4,096 + 16,384 entries) until the shipped heap ran out. */
    @Test
    void containersNamedByKilobytesOfTextAreAnsweredAtOnceAndKeptNowhere() throws Exception {
        try (FakeNriRuntime runtime = new FakeNriRuntime(dir.resolve("nri.sock"))) {
            NriPlugin plugin = new NriPlugin(dir.resolve("nri.sock"), nri, Duration.ofMillis(500), 2);
            plugin.start();
            try {
                FakeNriRuntime.Peer peer = runtime.acceptConfigured(WAIT, 2000);
                PodSandbox pod = NriInputs.pod("p");
                String firstId = null;
                long slowest = 0;
                for (int i = 0; i < 3000; i++) {
                    String id = (i + "x").repeat(4096 / (i + "x").length());
                    firstId = firstId == null ? id : firstId;
                    Container c = NriInputs.plainContainer(id, pod, 0).build();
                    assertThat(peer.call("CreateContainer", CreateContainerRequest.newBuilder().setPod(pod).setContainer(c).build(), WAIT)
                            .ok()).isTrue();
                    FakeNriRuntime.Reply start = peer.startContainerDedicated(pod, c.toBuilder().setPid(4242).build(), WAIT);
                    assertThat(start.ok()).isTrue();
                    slowest = Math.max(slowest, start.nanos());
                }
                System.out.printf("[nri-plain] 3,000 containers with 4 KiB ids: slowest StartContainer answer %.1f ms%n", slowest / 1e6);
                Thread.sleep(300);
                assertThat(metrics.examined()).as("none counted: none was kept").isEmpty();
                assertThat(agent.nriPlain().leftToNri(new RepairQueue.Key("containerd", firstId))).isFalse();
            } finally {
                plugin.close();
            }
        }
    }

    /** Found (info): a start without a process for a container its create called plain was never examined. */
    @Test
    void aStartThatShowsAGpuAskWithoutAProcessIsTheEventPaths() throws Exception {
        ContainerInfo c = fixtures.gpuContainer(ContainerFixtures.newId(), Instant.now());
        containerd.put(c);
        nri.createContainer(POD, nriContainer(c.id(), 0, List.of()));

        NriContainer start = nriContainer(c.id(), 0, List.of("NVIDIA_VISIBLE_DEVICES=all"));
        assertThat(nri.wantsStart(POD, start)).as("nothing to open without a process").isFalse();
        nri.answeredAtOnce(POD, start);

        await("repaired through the event path", WAIT, () -> metrics.examined().contains(ContainerOutcome.REPAIRED));
        assertThat(agent.nriPlain().leftToNri(new RepairQueue.Key("containerd", c.id()))).isFalse();
    }
}
