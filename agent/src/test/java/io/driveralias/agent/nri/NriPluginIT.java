package io.driveralias.agent.nri;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.nri.FakeNriHandler.Connected;
import io.driveralias.agent.nri.FakeNriHandler.Disconnected;
import io.driveralias.agent.nri.FakeNriHandler.Event;
import io.driveralias.agent.nri.FakeNriHandler.Started;
import io.driveralias.agent.nri.FakeNriHandler.Synchronized;
import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.ContainerdHarness;
import io.driveralias.agent.testing.ContainerdVersion;
import io.driveralias.agent.testing.CriClient;
import io.driveralias.agent.testing.Processes;
import io.driveralias.agent.testing.SharedEngines;
import io.driveralias.agent.testing.cri.ContainerState;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.ResourceLock;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The NRI plugin against real containerd 1.7.24 (NRI turned on) and 2.1.9 (NRI on by default),
 * private instances of {@link ContainerdHarness}, with pods made through the CRI as the kubelet
 * makes them; the plugin's handler is a {@link FakeNriHandler}. Registration and Configure;
 * StartContainer with the process's pid and its root mounted, before the first instruction;
 * Synchronize for a plugin that connects while containers run; a handler that overruns its
 * deadline; containerd killed and started again; {@code ctr run} containers, which never reach NRI;
 * and the time the plugin adds to a container's start. Figures are printed as {@code [nri-it]}.
 */
@Timeout(900)
@ResourceLock(SharedEngines.CONTAINERD)
class NriPluginIT {

    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final String K8S = ContainerdHarness.K8S;

    private final List<NriPlugin> plugins = new ArrayList<>();
    private final List<CriClient.Sandbox> pods = Collections.synchronizedList(new ArrayList<>());
    private ContainerdHarness containerd;

    static Stream<ContainerdVersion> releases() {
        return ContainerdVersion.nriReleases();
    }

    @AfterEach
    void cleanUp() {
        plugins.forEach(NriPlugin::close);
        for (CriClient.Sandbox pod : pods) {
            try {
                removePod(pod);
            } catch (RuntimeException e) {
                // best effort: the harness ends everything at the JVM's exit
            }
        }
    }

    /**
     * RemovePodSandbox, tried again as the kubelet would: containerd 1.7 and 2.1 sometimes fail to
     * stop a container whose shim connection just closed ("ttrpc: closed"), and succeed on the next try.
     */
    private void removePod(CriClient.Sandbox pod) {
        for (int attempt = 1; ; attempt++) {
            try {
                containerd.cri().removePod(pod);
                return;
            } catch (RuntimeException e) {
                if (attempt == 3) {
                    throw e;
                }
                System.out.println("[nri-it] removing a pod failed, trying again: " + e.getMessage());
                try {
                    Thread.sleep(1000);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
            }
        }
    }

    private ContainerdHarness containerd(ContainerdVersion release) {
        containerd = ContainerdHarness.of(release);
        return containerd;
    }

    /** A plugin on the runtime's NRI socket, registered, configured and synchronized. */
    private NriPlugin connect(FakeNriHandler handler, Duration budget) {
        NriPlugin plugin = new NriPlugin(containerd.nriSocket(), handler, budget, 2);
        plugins.add(plugin);
        plugin.start();
        handler.await(Connected.class, WAIT);
        synchronizedView(handler);
        assertThat(plugin.connected()).isTrue();
        return plugin;
    }

    /** The parts of one Synchronize, up to the last, joined. */
    private static NriSync synchronizedView(FakeNriHandler handler) {
        List<NriPod> pods = new ArrayList<>();
        List<NriContainer> containers = new ArrayList<>();
        int dropped = 0;
        while (true) {
            NriSync part = handler.await(Synchronized.class, WAIT).part();
            pods.addAll(part.pods());
            containers.addAll(part.containers());
            dropped += part.dropped();
            if (part.last()) {
                return new NriSync(pods, containers, true, dropped);
            }
        }
    }

    private CriClient.Sandbox pod(String name) {
        CriClient.Sandbox pod = containerd.cri().runPodSandbox(CriClient.Pod.named(name), "");
        pods.add(pod);
        return pod;
    }

    private String image() {
        return containerd.busyboxImage(K8S);
    }

    private static CriClient.Spec sh(String script) {
        return CriClient.Spec.of("sh", "-c", script);
    }

    private String run(CriClient.Sandbox pod, String name, CriClient.Spec spec) {
        String id = containerd.cri().createContainer(pod, name, image(), spec);
        containerd.cri().startContainer(id);
        return id;
    }

    @ParameterizedTest(name = "containerd {0}")
    @MethodSource("releases")
    void thePluginRegistersAndIsConfiguredForStartContainer(ContainerdVersion release) {
        containerd(release);
        FakeNriHandler handler = new FakeNriHandler();
        NriPlugin plugin = new NriPlugin(containerd.nriSocket(), handler);
        plugins.add(plugin);
        long start = System.nanoTime();
        plugin.start();

        NriRuntimeInfo connected = handler.await(Connected.class, WAIT).runtime();
        long configured = System.nanoTime() - start;
        NriSync sync = synchronizedView(handler);

        System.out.printf("[nri-it] containerd %s: registered and configured in %.1f ms; runtime %s %s (NRI %s), request timeout"
                + " %d ms; Synchronize: %d pods, %d containers%n", containerd.version(), configured / 1e6, connected.name(),
                connected.version(), connected.nriVersion().isEmpty() ? "not said" : connected.nriVersion(),
                connected.requestTimeout().toMillis(), sync.pods().size(), sync.containers().size());
        assertThat(connected.name()).isEqualTo("containerd");
        assertThat(connected.version()).contains(containerd.version());
        assertThat(connected.requestTimeout()).isEqualTo(Duration.ofSeconds(2));
        assertThat(plugin.connected()).isTrue();
    }

    @ParameterizedTest(name = "containerd {0}")
    @MethodSource("releases")
    void startContainerComesWithThePidAndTheRootBeforeTheFirstInstruction(ContainerdVersion release) throws Exception {
        containerd(release);
        Map<String, String> seen = new ConcurrentHashMap<>();
        FakeNriHandler handler = new FakeNriHandler().onStart((pod, container, call) -> {
            Path root = Path.of("/proc/" + container.pid() + "/root");
            seen.put("busybox", String.valueOf(Files.isRegularFile(root.resolve("bin/busybox"))));
            try {
                // The test's own write, through the host's view of the container's root (the agent writes in-root).
                Files.writeString(root.resolve("tmp/nri-marker"), "written-in-start-container " + container.id() + "\n");
                seen.put("written", "yes");
            } catch (IOException e) {
                seen.put("written", e.toString());
            }
        });
        connect(handler, StartDeadline.DEFAULT_BUDGET);

        CriClient.Sandbox pod = pod("nri-first");
        String id = run(pod, "first", sh("cat /tmp/nri-marker 2>/dev/null || echo no-marker; echo end; sleep 3600"));

        FakeNriHandler.Created created = handler.await(FakeNriHandler.Created.class, WAIT);
        assertThat(created.container().id()).isEqualTo(id);
        assertThat(created.container().pid()).as("no process at its creation").isZero();
        Started started = handler.await(Started.class, WAIT);
        AgentProcess.awaitTrue("the container's first output", WAIT, () -> containerd.cri().logs(pod, "first").contains("end\n"));
        String out = containerd.cri().logs(pod, "first");
        NriContainer c = started.container();
        System.out.printf("[nri-it] containerd %s: StartContainer for %s: pid %d, state %s, labels %s, annotations %s, root has the"
                + " image's files: %s; the container's first output: %s%n", containerd.version(), id.substring(0, 12), c.pid(),
                c.state(), c.labels().keySet(), c.annotations().keySet(), seen.get("busybox"), out.replace('\n', ' '));
        assertThat(c.id()).isEqualTo(id);
        assertThat(c.podSandboxId()).isEqualTo(pod.id());
        assertThat(c.name()).isEqualTo("first");
        assertThat(c.pid()).isEqualTo(containerd.taskPid(K8S, id));
        assertThat(c.labels()).containsEntry("io.kubernetes.container.name", "first")
                .containsEntry("io.kubernetes.pod.name", pod.pod().name());
        assertThat(started.pod().id()).isEqualTo(pod.id());
        assertThat(started.pod().name()).isEqualTo(pod.pod().name());
        assertThat(started.pod().uid()).isEqualTo(pod.pod().uid());
        assertThat(seen).containsEntry("busybox", "true").containsEntry("written", "yes");
        assertThat(out).startsWith("written-in-start-container " + id + "\n");
        if (release == ContainerdVersion.V2_3) {
            // NRI 0.12 called the dedicated StartContainer (the handler ran inside it), and had no reason to fall back.
            String log = containerd.logTail(5000);
            // containerd's log escapes the quotes: registered as \"50-driver-alias\" (with NRI version v0.12.0)
            assertThat(log).contains("registered as \\\"" + NriPlugin.INDEX + "-" + NriPlugin.NAME + "\\\" (with NRI version "
                    + NriSession.NRI_VERSION + ")");
            assertThat(log).doesNotContain("uses deprecated StateChange").doesNotContain("does not implement a dedicated");
        }
    }

    /**
     * At CreateContainer, containerd has not stored the container yet, so its {@code /containers/create}
     * event comes after the plugin has seen it: what lets the agent skip describing containers NRI
     * answers. The handler asks containerd ({@code ctr containers info}) while it holds the call. That
     * observation counts only if it ended well within the runtime's 2 s request timeout: past it,
     * containerd drops the plugin and stores the container anyway, and a late {@code ctr} finds it (a
     * slow probe, not a different order; once in CI, on a loaded machine). Such a try is printed and
     * made again with a new plugin and pod, at most three times.
     */
    @ParameterizedTest(name = "containerd {0}")
    @MethodSource("releases")
    void createContainerComesBeforeContainerdStoresTheContainer(ContainerdVersion release) {
        containerd(release);
        Duration trustworthy = Duration.ofSeconds(1);
        for (int attempt = 1; attempt <= 3; attempt++) {
            Map<String, Long> probeNanos = new ConcurrentHashMap<>();
            Map<String, Boolean> stored = new ConcurrentHashMap<>();
            FakeNriHandler handler = new FakeNriHandler().onCreate(container -> {
                long start = System.nanoTime();
                boolean found = Processes.run(containerd.ctr("-n", K8S, "containers", "info", container.id())).exitCode() == 0;
                probeNanos.put(container.id(), System.nanoTime() - start);
                stored.put(container.id(), found);
            });
            NriPlugin plugin = connect(handler, StartDeadline.DEFAULT_BUDGET);
            CriClient.Sandbox pod = pod("nri-order-" + attempt);
            String id = containerd.cri().createContainer(pod, "ordered", image(), sh("sleep 3600"));
            assertThat(handler.await(FakeNriHandler.Created.class, WAIT).container().id()).isEqualTo(id);
            Duration probe = Duration.ofNanos(probeNanos.get(id));
            System.out.printf("[nri-it] containerd %s, try %d: at CreateContainer, ctr containers info found the container: %s"
                    + " (asked in %.0f ms, load %s)%n", containerd.version(), attempt, stored.get(id), probe.toNanos() / 1e6,
                    loadAverage());
            plugin.close();
            if (probe.compareTo(trustworthy) < 0) {
                assertThat(stored.get(id)).as("CreateContainer comes before containerd stores the container").isFalse();
                return;
            }
        }
        throw new AssertionError("ctr containers info took " + trustworthy.toMillis() + " ms or more in three tries: the order"
                + " was not observed (see the [nri-it] lines)");
    }

    @ParameterizedTest(name = "containerd {0}")
    @MethodSource("releases")
    void aPluginThatConnectsLateIsToldTheRunningContainersWithTheirPids(ContainerdVersion release) {
        containerd(release);
        CriClient.Sandbox a = pod("nri-late-a");
        CriClient.Sandbox b = pod("nri-late-b");
        String first = run(a, "one", sh("sleep 3600"));
        String second = run(b, "two", sh("sleep 3600"));

        FakeNriHandler handler = new FakeNriHandler();
        NriPlugin plugin = new NriPlugin(containerd.nriSocket(), handler);
        plugins.add(plugin);
        plugin.start();
        handler.await(Connected.class, WAIT);
        NriSync sync = synchronizedView(handler);

        System.out.printf("[nri-it] containerd %s: Synchronize for a late plugin: %d pods, %d containers (%d dropped)%n",
                containerd.version(), sync.pods().size(), sync.containers().size(), sync.dropped());
        for (String id : List.of(first, second)) {
            NriContainer c = sync.containers().stream().filter(x -> x.id().equals(id)).findFirst().orElseThrow(() ->
                    new AssertionError(id + " not in Synchronize"));
            assertThat(c.pid()).isEqualTo(containerd.taskPid(K8S, id));
            assertThat(c.state()).isEqualTo(NriContainer.State.RUNNING);
        }
        assertThat(sync.pods()).extracting(NriPod::id).contains(a.id(), b.id());
        NriPod pod = sync.pods().stream().filter(p -> p.id().equals(a.id())).findFirst().orElseThrow();
        assertThat(pod.name()).isEqualTo(a.pod().name());
        assertThat(pod.namespace()).isEqualTo(a.pod().namespace());
        assertThat(pod.uid()).isEqualTo(a.pod().uid());
    }

    @ParameterizedTest(name = "containerd {0}")
    @MethodSource("releases")
    void aHandlerPastItsDeadlineIsAnsweredInTimeThePodStartsAndThePluginStaysRegistered(ContainerdVersion release)
            throws InterruptedException {
        containerd(release);
        // The slow handler runs until the next pod's start has reached the plugin (at most 30 s): that start
        // can only come if the runtime had the slow one's answer at the deadline, whatever the machine's load.
        CountDownLatch nextSeen = new CountDownLatch(1);
        AtomicBoolean slowOutlivedByNext = new AtomicBoolean();
        FakeNriHandler handler = new FakeNriHandler().onStart((pod, container, call) -> {
            if (container.name().equals("slow")) {
                slowOutlivedByNext.set(nextSeen.await(30, TimeUnit.SECONDS));
            } else if (container.name().equals("after")) {
                nextSeen.countDown();
            }
        });
        NriPlugin plugin = connect(handler, StartDeadline.DEFAULT_BUDGET);

        CriClient.Sandbox pod = pod("nri-slow");
        long start = System.nanoTime();
        String slow = run(pod, "slow", sh("sleep 3600"));
        long slowStart = System.nanoTime() - start;
        CriClient.Sandbox next = pod("nri-after-slow");
        start = System.nanoTime();
        String after = run(next, "after", sh("sleep 3600"));
        long afterStart = System.nanoTime() - start;

        // Both handlers return at about the same moment: found by container, not by order.
        Map<String, Started> started = new HashMap<>();
        for (int i = 0; i < 2; i++) {
            Started s = handler.await(Started.class, WAIT);
            started.put(s.container().id(), s);
        }
        Started slowStarted = started.get(slow);
        Started afterStarted = started.get(after);
        System.out.printf("[nri-it] containerd %s: a handler held past its 500 ms deadline: its container's CreateContainer+Start"
                + " took %.0f ms, the next pod's %.0f ms, which reached the plugin while the first handler still ran%n",
                containerd.version(), slowStart / 1e6, afterStart / 1e6);
        assertThat(slowStarted).as("the slow container's start").isNotNull();
        assertThat(afterStarted).as("the next container's start").isNotNull();
        assertThat(slowOutlivedByNext).as("the next pod's start reached the plugin while the slow handler ran").isTrue();
        assertThat(slowStarted.answeredFirst()).as("answered at the deadline, before its handler returned").isTrue();
        assertThat(afterStarted.answeredFirst()).isFalse();
        assertThat(Duration.ofNanos(slowStarted.deadlineNanos() - slowStarted.receivedNanos())).as("the deadline")
                .isLessThanOrEqualTo(Duration.ofMillis(500));
        assertThat(containerd.cri().containerStatus(slow).getState()).isEqualTo(ContainerState.CONTAINER_RUNNING);
        // containerd drops a plugin that has not answered within its request timeout (2 s): still registered,
        // the answer came within it.
        assertThat(plugin.connected()).isTrue();
        assertThat(handlerEvents(handler)).noneMatch(e -> e instanceof Disconnected);
    }

    /**
     * A handler that says its container is ready ({@link StartCall#answerNow}) and goes on with its
     * report lets the runtime go on at once: the next plugin (a test plugin at index 90) is called for
     * the same container while the handler still runs, well before the deadline at which the plugin
     * would have answered anyway (1 s: half the runtime's request timeout). Only the early answer can
     * let the runtime call the next plugin that soon; containerd's step from one plugin's answer to the
     * next plugin's call is in-process, where the deadline's margin is 1 s.
     */
    @ParameterizedTest(name = "containerd {0}")
    @MethodSource("releases")
    void aHandlerThatAnswersEarlyLetsTheRuntimeCallTheNextPluginWhileItRuns(ContainerdVersion release) throws IOException {
        containerd(release);
        CountDownLatch nextPluginCalled = new CountDownLatch(1);
        AtomicBoolean ranUntilNextPlugin = new AtomicBoolean();
        FakeNriHandler handler = new FakeNriHandler().onStart((pod, container, call) -> {
            call.answerNow();
            // The report's stand-in: it runs until the runtime has called the next plugin (30 s at most).
            ranUntilNextPlugin.set(nextPluginCalled.await(30, TimeUnit.SECONDS));
        });
        connect(handler, Duration.ofSeconds(1));
        FakeNriHandler next = new FakeNriHandler().onStart((pod, container, call) -> nextPluginCalled.countDown());
        try (IndexedNriPlugin nextPlugin = IndexedNriPlugin.connect(containerd.nriSocket(), "daa-test-next", "90", next, WAIT)) {
            next.await(Connected.class, WAIT);
            synchronizedView(next);
            String id = run(pod("nri-early"), "early", sh("sleep 3600"));
            Started early = handler.await(Started.class, WAIT);
            Started after = next.await(Started.class, WAIT);
            System.out.printf("[nri-it] containerd %s: a handler that answered early: the next plugin called %.1f ms after the"
                    + " request reached the handler (deadline %.0f ms), the handler ran %.1f ms (load %s)%n", containerd.version(),
                    (after.receivedNanos() - early.receivedNanos()) / 1e6, (early.deadlineNanos() - early.receivedNanos()) / 1e6,
                    (early.returnedNanos() - early.enteredNanos()) / 1e6, loadAverage());
            assertThat(early.container().id()).isEqualTo(id);
            assertThat(after.container().id()).isEqualTo(id);
            assertThat(ranUntilNextPlugin).as("the handler still ran when the runtime called the next plugin").isTrue();
            assertThat(after.receivedNanos()).as("the next plugin called before this one's deadline").isLessThan(early.deadlineNanos());
            assertThat(Duration.ofNanos(early.deadlineNanos() - early.receivedNanos())).as("the deadline")
                    .isLessThanOrEqualTo(Duration.ofSeconds(1));
            assertThat(containerd.cri().containerStatus(id).getState()).isEqualTo(ContainerState.CONTAINER_RUNNING);
        }
    }

    private static List<Event> handlerEvents(FakeNriHandler handler) {
        try {
            return handler.drain(Duration.ofMillis(500));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    @ParameterizedTest(name = "containerd {0}")
    @MethodSource("releases")
    void afterContainerdIsKilledAndStartedAgainThePluginRegistersAndSynchronizesAgain(ContainerdVersion release) {
        containerd(release);
        FakeNriHandler handler = new FakeNriHandler();
        NriPlugin plugin = connect(handler, StartDeadline.DEFAULT_BUDGET);
        CriClient.Sandbox pod = pod("nri-survivor");
        String survivor = run(pod, "survivor", sh("sleep 3600"));
        handler.await(Started.class, WAIT);

        containerd.kill();
        String why = handler.await(Disconnected.class, WAIT).why();
        long restart = System.nanoTime();
        containerd.start();
        handler.await(Connected.class, WAIT);
        long back = System.nanoTime() - restart;
        NriSync sync = synchronizedView(handler);

        System.out.printf("[nri-it] containerd %s killed (-9): the plugin saw \"%s\"; registered again %.0f ms after the restart"
                + " began; Synchronize listed %d containers%n", containerd.version(), why, back / 1e6, sync.containers().size());
        assertThat(sync.containers()).extracting(NriContainer::id).contains(survivor);
        assertThat(plugin.connected()).isTrue();
        String next = run(pod("nri-after-restart"), "next", sh("sleep 3600"));
        assertThat(handler.await(Started.class, WAIT).container().id()).isEqualTo(next);
    }

    /**
     * The opt-in guarantee: a pod that names the agent's plugin in NRI's
     * {@code required-plugins.noderesource.dev} annotation is not created while the plugin is away
     * (containerd 2.2+ with NRI's default validator on), and is once it is back; a pod without the
     * annotation is never held. On 1.7 and 2.1 (no validator) the annotation changes nothing.
     */
    @ParameterizedTest(name = "containerd {0}")
    @MethodSource("releases")
    void aPodThatRequiresThePluginIsNotCreatedWhileItIsAway(ContainerdVersion release) {
        containerd(release);
        CriClient.Sandbox required = containerd.cri().runPodSandbox(CriClient.Pod.named("nri-required"), "",
                Map.of("required-plugins.noderesource.dev/container.gpu", "[\"" + NriPlugin.NAME + "\"]"));
        pods.add(required);
        CriClient.Sandbox ordinary = pod("nri-not-required");

        String plain = containerd.cri().createContainer(ordinary, "plain", image(), sh("sleep 3600"));
        assertThat(plain).as("a pod without the annotation is never held").isNotEmpty();
        String refusal = "";
        try {
            containerd.cri().createContainer(required, "gpu", image(), sh("sleep 3600"));
        } catch (RuntimeException e) {
            refusal = String.valueOf(e.getMessage());
        }
        System.out.printf("[nri-it] containerd %s, the plugin away: a pod requiring it by annotation %s%n", containerd.version(),
                refusal.isEmpty() ? "was created (no validator)" : "was refused: " + refusal);
        if (release == ContainerdVersion.V2_3) {
            assertThat(refusal).contains("required plugin \"" + NriPlugin.NAME + "\" not present");
        } else {
            assertThat(refusal).as("no validator before NRI 0.10").isEmpty();
            return;
        }

        FakeNriHandler handler = new FakeNriHandler();
        connect(handler, StartDeadline.DEFAULT_BUDGET);
        String id = containerd.cri().createContainer(required, "gpu", image(), sh("sleep 3600"));
        containerd.cri().startContainer(id);
        assertThat(handler.await(Started.class, WAIT).container().id()).isEqualTo(id);
    }

    @ParameterizedTest(name = "containerd {0}")
    @MethodSource("releases")
    void aCtrRunContainerNeverReachesThePlugin(ContainerdVersion release) {
        containerd(release);
        FakeNriHandler handler = new FakeNriHandler();
        connect(handler, StartDeadline.DEFAULT_BUDGET);
        String id = "nri-ctr-" + Long.toHexString(System.nanoTime());
        try {
            containerd.ctrRun(K8S, image(), id, "sleep", "3600");
            List<Event> events = handlerEvents(handler);
            assertThat(events).as("events for a ctr-made container").isEmpty();
        } finally {
            containerd.remove(K8S, id);
        }
        String cri = run(pod("nri-after-ctr"), "cri", sh("sleep 3600"));
        assertThat(handler.await(Started.class, WAIT).container().id()).isEqualTo(cri);
    }

    /**
     * What the plugin adds to a container's start, its handler returning at once: CRI StartContainer
     * with the plugin and without it, in alternating batches of ten, and the plugin's own share (from
     * the request's first byte to the handler's return).
     */
    @ParameterizedTest(name = "containerd {0}")
    @MethodSource("releases")
    void theTimeThePluginAddsToAStart(ContainerdVersion release) {
        containerd(release);
        int batches = Integer.getInteger("nri.batches", 5);
        List<Long> with = new ArrayList<>();
        List<Long> without = new ArrayList<>();
        List<Long> inPlugin = new ArrayList<>();
        List<Long> toHandler = new ArrayList<>();
        for (int batch = 0; batch < 2 * batches; batch++) {
            boolean plugged = batch % 2 == 0;
            FakeNriHandler handler = new FakeNriHandler();
            NriPlugin plugin = plugged ? connect(handler, StartDeadline.DEFAULT_BUDGET) : null;
            CriClient.Sandbox pod = pod("nri-timing-" + batch);
            for (int i = 0; i < 10; i++) {
                String id = containerd.cri().createContainer(pod, "c" + i, image(), sh("sleep 3600"));
                long start = System.nanoTime();
                containerd.cri().startContainer(id);
                (plugged ? with : without).add(System.nanoTime() - start);
                if (plugged) {
                    Started s = handler.await(Started.class, WAIT);
                    assertThat(s.container().id()).isEqualTo(id);
                    inPlugin.add(s.returnedNanos() - s.receivedNanos());
                    toHandler.add(s.enteredNanos() - s.receivedNanos());
                }
            }
            if (plugin != null) {
                plugin.close();
            }
            removePod(pod);
            pods.remove(pod);
        }
        System.out.printf("[nri-it] containerd %s, CRI StartContainer over %d containers each (load %s): with the plugin p50 %.1f ms"
                + " p99 %.1f ms; without p50 %.1f ms p99 %.1f ms; in the plugin (request read to handler returned) p50 %.3f ms"
                + " p99 %.3f ms, of which read, decode and hand-over to a call thread p50 %.3f ms p99 %.3f ms%n",
                containerd.version(), with.size(), loadAverage(), p(with, 50), p(with, 99), p(without, 50), p(without, 99),
                p(inPlugin, 50), p(inPlugin, 99), p(toHandler, 50), p(toHandler, 99));
        assertThat(inPlugin).hasSize(10 * batches);
    }

    private static double p(List<Long> nanos, int percentile) {
        List<Long> sorted = nanos.stream().sorted().toList();
        int index = (int) Math.ceil(percentile / 100.0 * sorted.size()) - 1;
        return sorted.get(Math.max(0, index)) / 1e6;
    }

    private static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
        } catch (IOException e) {
            return "?";
        }
    }
}
