package io.driveralias.agent.nri;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.nri.FakeNriHandler.Connected;
import io.driveralias.agent.nri.FakeNriHandler.Disconnected;
import io.driveralias.agent.nri.FakeNriHandler.NotServed;
import io.driveralias.agent.nri.FakeNriHandler.Started;
import io.driveralias.agent.nri.FakeNriHandler.Synchronized;
import io.driveralias.agent.nri.FakeNriRuntime.Peer;
import io.driveralias.agent.nri.FakeNriRuntime.Reply;
import io.driveralias.agent.testing.Timing;
import io.driveralias.agent.testing.nri.ConfigureRequest;
import io.driveralias.agent.testing.nri.ConfigureResponse;
import io.driveralias.agent.testing.nri.Container;
import io.driveralias.agent.testing.nri.CreateContainerRequest;
import io.driveralias.agent.testing.nri.Empty;
import io.driveralias.agent.testing.nri.PodSandbox;
import io.driveralias.agent.testing.nri.RegisterPluginRequest;
import io.driveralias.agent.testing.nri.StartContainerRequest;
import io.driveralias.agent.testing.nri.StateChangeEvent;
import io.driveralias.agent.testing.nri.SynchronizeRequest;
import io.driveralias.agent.testing.nri.SynchronizeResponse;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The plugin against a fake runtime over a real Unix socket ({@link FakeNriRuntime}): registration,
 * Configure, Synchronize, StartContainer within its deadline or by it, a full call pool, answers to
 * everything else, and connecting again whenever the connection goes.
 */
@Timeout(60)
@Timing
class NriPluginTest {

    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final PodSandbox POD = NriInputs.pod("train");

    @TempDir
    Path dir;

    private NriPlugin plugin;
    private FakeNriRuntime runtime;
    private final FakeNriHandler handler = new FakeNriHandler();

    @AfterEach
    void stop() {
        if (plugin != null) {
            plugin.close();
        }
        if (runtime != null) {
            runtime.close();
        }
    }

    private Peer connect(Duration budget, int threads) {
        runtime = new FakeNriRuntime(dir.resolve("nri.sock"));
        plugin = new NriPlugin(dir.resolve("nri.sock"), handler, budget, threads);
        plugin.start();
        return runtime.accept(WAIT);
    }

    /** Connected, registered and configured as containerd 2.1.9 with a 2 s request timeout. */
    private Peer configured(Duration budget, int callThreads) {
        Peer peer = connect(budget, callThreads);
        peer.awaitRegistration(WAIT);
        peer.configure("containerd", "v2.1.9", 2000);
        handler.await(Connected.class, WAIT);
        return peer;
    }

    @Test
    void registersConfiguresForStartContainerAloneAndHandsOverSynchronize() throws Exception {
        Peer peer = connect(Duration.ofMillis(500), 2);

        RegisterPluginRequest registration = peer.awaitRegistration(WAIT);
        assertThat(registration.getPluginName()).isEqualTo("driver-alias");
        assertThat(registration.getPluginIdx()).isEqualTo("50");
        assertThat(plugin.connected()).isFalse();

        Reply configured = peer.configure("containerd", "v2.1.9", 2000);
        assertThat(configured.ok()).isTrue();
        assertThat(configured.as(ConfigureResponse.parser()).getEvents()).as("CreateContainer (4) and StartContainer (6)")
                .isEqualTo(0x28);
        assertThat(handler.await(Connected.class, WAIT).runtime())
                .isEqualTo(new NriRuntimeInfo("containerd", "v2.1.9", "", Duration.ofSeconds(2)));
        assertThat(plugin.connected()).isTrue();

        Reply first = peer.synchronize(SynchronizeRequest.newBuilder().addPods(POD)
                .addContainers(NriInputs.gpuContainer("c1", POD, 11).setState(3)).setMore(true).build());
        assertThat(first.as(SynchronizeResponse.parser()).getMore()).isTrue();
        assertThat(first.as(SynchronizeResponse.parser()).getUpdateCount()).isZero();
        Reply second = peer.synchronize(SynchronizeRequest.newBuilder()
                .addContainers(NriInputs.plainContainer("c2", POD, 12).setState(3)).build());
        assertThat(second.as(SynchronizeResponse.parser()).getMore()).isFalse();

        NriSync one = handler.await(Synchronized.class, WAIT).part();
        assertThat(one.last()).isFalse();
        assertThat(one.pods()).extracting(NriPod::id).containsExactly("sandbox-train");
        assertThat(one.containers()).extracting(NriContainer::id, NriContainer::pid, NriContainer::state)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("c1", 11, NriContainer.State.RUNNING));
        NriSync two = handler.await(Synchronized.class, WAIT).part();
        assertThat(two.last()).isTrue();
        assertThat(two.containers()).extracting(NriContainer::id).containsExactly("c2");
    }

    @Test
    void startContainerIsAnsweredWhenTheHandlerReturns() {
        Peer peer = configured(Duration.ofMillis(500), 2);

        Reply reply = peer.startContainer(POD, NriInputs.gpuContainer("c1", POD, 4242).build(), WAIT);

        assertThat(reply.ok()).isTrue();
        assertThat(reply.as(Empty.parser())).isEqualTo(Empty.getDefaultInstance());
        Started started = handler.await(Started.class, WAIT);
        assertThat(started.pod().name()).isEqualTo("train");
        assertThat(started.container().id()).isEqualTo("c1");
        assertThat(started.container().pid()).isEqualTo(4242);
        assertThat(started.container().nvidiaDevice()).isTrue();
        assertThat(started.answeredFirst()).isFalse();
        assertThat(started.deadlineNanos() - started.receivedNanos()).isBetween(0L, Duration.ofMillis(500).toNanos());
    }

    @Test
    void aHandlerThatSaysItsContainerIsReadyIsAnsweredBeforeItReturns() throws Exception {
        // The agent's report (log line, metrics, the pod's Event) comes after its answer: no pod start waits for it.
        CountDownLatch reported = new CountDownLatch(1);
        handler.onStart((pod, container, call) -> {
            call.answerNow();
            reported.await();
        });
        Peer peer = configured(Duration.ofSeconds(2), 2);

        Reply reply = peer.startContainer(POD, NriInputs.gpuContainer("ready", POD, 1).build(), WAIT);

        assertThat(reply.ok()).isTrue();
        assertThat(reply.nanos()).as("answered while the handler still reports").isLessThan(Duration.ofMillis(400).toNanos());
        reported.countDown();
        assertThat(handler.await(Started.class, WAIT).container().id()).isEqualTo("ready");
    }

    @Test
    void aHandlerPastTheDeadlineIsAnsweredForByTheDeadlineAndTheNextCallStillServed() {
        handler.onStart((pod, container, call) -> {
            if (container.id().equals("slow")) {
                Thread.sleep(3000);
            }
        });
        Peer peer = configured(Duration.ofMillis(300), 2);

        Reply slow = peer.startContainer(POD, NriInputs.gpuContainer("slow", POD, 1).build(), WAIT);
        Reply next = peer.startContainer(POD, NriInputs.gpuContainer("fast", POD, 2).build(), WAIT);

        System.out.printf("[nri-plugin] handler sleeping 3 s, budget 300 ms: answered after %.1f ms; the next call in %.1f ms%n",
                slow.nanos() / 1e6, next.nanos() / 1e6);
        assertThat(slow.ok()).isTrue();
        assertThat(slow.nanos()).isBetween(Duration.ofMillis(250).toNanos(), Duration.ofMillis(1000).toNanos());
        assertThat(next.ok()).isTrue();
        assertThat(handler.await(Started.class, WAIT).container().id()).isEqualTo("fast");
        Started late = handler.await(Started.class, WAIT);
        assertThat(late.container().id()).isEqualTo("slow");
        assertThat(late.answeredFirst()).isTrue();
    }

    @Test
    void aStartContainerRoundTripOverTheSocketForAHandlerThatReturnsAtOnce() {
        Peer peer = configured(Duration.ofMillis(500), 2);
        Container container = NriInputs.gpuContainer("c1", POD, 1).build();
        java.util.List<Long> nanos = new java.util.ArrayList<>();
        for (int i = 0; i < 300; i++) {
            Reply reply = peer.startContainer(POD, container, WAIT);
            assertThat(reply.ok()).isTrue();
            if (i >= 100) {
                nanos.add(reply.nanos());
            }
            handler.await(Started.class, WAIT);
        }
        java.util.Collections.sort(nanos);
        System.out.printf("[nri-plugin] StartContainer round trip over the socket (fake runtime, 200 calls after 100 to warm up):"
                + " p50 %.3f ms, p99 %.3f ms%n", nanos.get(99) / 1e6, nanos.get(197) / 1e6);
    }

    @Test
    void theDeadlineIsHalfTheRuntimesTimeoutWhenThatIsShorterThanTheBudget() {
        handler.onStart((pod, container, call) -> Thread.sleep(2000));
        Peer peer = connect(Duration.ofSeconds(5), 2);
        peer.awaitRegistration(WAIT);
        peer.configure("containerd", "v2.1.9", 400);
        handler.await(Connected.class, WAIT);

        Reply reply = peer.startContainer(POD, NriInputs.gpuContainer("c1", POD, 1).build(), WAIT);

        assertThat(reply.nanos()).isBetween(Duration.ofMillis(150).toNanos(), Duration.ofMillis(900).toNanos());
    }

    @Test
    void withEveryCallThreadBusyStartContainerIsAnsweredAtOnceAndReportedNotServed() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        handler.onStart((pod, container, call) -> release.await());
        // A budget of a second against a bound of half of it: answered at once, not at the deadline,
        // with room for a loaded machine's scheduling (200 ms against 150 left 50).
        Peer peer = configured(Duration.ofMillis(1000), 1);

        Reply held = peer.startContainer(POD, NriInputs.gpuContainer("held", POD, 1).build(), WAIT);
        Reply refused = peer.startContainer(POD, NriInputs.gpuContainer("refused", POD, 2).build(), WAIT);

        System.out.printf("[nri-plugin] pool of 1 held: the next StartContainer answered in %.2f ms%n", refused.nanos() / 1e6);
        assertThat(held.ok()).isTrue();
        assertThat(refused.ok()).isTrue();
        assertThat(refused.nanos()).isLessThan(Duration.ofMillis(500).toNanos());
        NotServed notServed = handler.await(NotServed.class, WAIT);
        assertThat(notServed.container().id()).isEqualTo("refused");
        assertThat(notServed.why()).contains("busy");
        release.countDown();
        assertThat(handler.await(Started.class, WAIT).container().id()).isEqualTo("held");
        // The fake records Started before its handler returns; the call thread's permit comes back just after.
        Thread.sleep(100);

        Reply again = peer.startContainer(POD, NriInputs.gpuContainer("after", POD, 3).build(), WAIT);
        assertThat(again.ok()).isTrue();
        assertThat(handler.await(Started.class, WAIT).container().id()).isEqualTo("after");
    }

    @Test
    void aHandlerThatThrowsStillGetsASuccessAnswer() {
        handler.onStart((pod, container, call) -> {
            throw new IllegalStateException("boom");
        });
        Peer peer = connect(Duration.ofMillis(500), 2);
        peer.awaitRegistration(WAIT);
        peer.configure("containerd", "v2.1.9", 2000);

        assertThat(peer.startContainer(POD, NriInputs.gpuContainer("c1", POD, 1).build(), WAIT).ok()).isTrue();
    }

    @Test
    void aStartTheHandlerDoesNotWantIsAnsweredWithoutACallThreadAndOthersStillReachIt() throws Exception {
        // The handler takes 800 ms, inside the deadline; an answer within half of it ran no handler.
        handler.wantsStart(container -> !container.id().equals("plain")).onStart((pod, container, call) -> Thread.sleep(800));
        Peer peer = configured(Duration.ofMillis(1000), 1);

        long begun = System.nanoTime();
        Reply plain = peer.startContainer(POD, NriInputs.gpuContainer("plain", POD, 1).build(), WAIT);
        long plainNanos = System.nanoTime() - begun;
        Reply gpu = peer.startContainer(POD, NriInputs.gpuContainer("gpu", POD, 2).build(), WAIT);

        assertThat(plain.ok()).isTrue();
        assertThat(Duration.ofNanos(plainNanos)).as("no handler ran for it").isLessThan(Duration.ofMillis(400));
        assertThat(gpu.ok()).isTrue();
        assertThat(handler.await(FakeNriHandler.AnsweredAtOnce.class, WAIT).container().id()).isEqualTo("plain");
        assertThat(handler.await(Started.class, WAIT).container().id()).isEqualTo("gpu");
        assertThat(handler.drain(Duration.ofMillis(200))).isEmpty();
    }

    @Test
    void aStartAnsweredAtOnceIsAnsweredBeforeTheHandlersBookkeeping() throws Exception {
        // NRI's lock is node-wide: what the handler does after deciding (a count, a read of /proc) holds no pod's start.
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        handler.wantsStart(container -> false).onAnsweredAtOnce(container -> release.await());
        Peer peer = configured(Duration.ofMillis(1000), 1);

        try {
            Reply plain = peer.startContainer(POD, NriInputs.gpuContainer("plain", POD, 1).build(), WAIT);

            assertThat(plain.ok()).as("answered while the bookkeeping still waits").isTrue();
            assertThat(handler.drain(Duration.ofMillis(100))).isEmpty();
        } finally {
            release.countDown();
        }
        assertThat(handler.await(FakeNriHandler.AnsweredAtOnce.class, WAIT).container().id()).isEqualTo("plain");
    }

    @Test
    void createContainerReachesTheHandlerDecodedAndIsAnsweredWithoutAnAdjustment() throws Exception {
        Peer peer = configured(Duration.ofMillis(500), 2);

        Container container = NriInputs.gpuContainer("c1", POD, 0).build();
        Reply create = peer.call("CreateContainer", CreateContainerRequest.newBuilder().setPod(POD).setContainer(container).build(),
                WAIT);

        assertThat(create.ok()).isTrue();
        assertThat(create.payload()).as("an empty CreateContainerResponse: no adjust, update or evict").isEmpty();
        FakeNriHandler.Created created = handler.await(FakeNriHandler.Created.class, WAIT);
        assertThat(created.container().id()).isEqualTo("c1");
        assertThat(created.container().pid()).isZero();
        assertThat(created.container().nvidiaEnv()).isNotEmpty();
        assertThat(created.pod().id()).isEqualTo(POD.getId());
    }

    @Test
    void otherStateChangesAreAnEmptySuccessAndReachNoHandler() throws Exception {
        Peer peer = configured(Duration.ofMillis(500), 2);

        Container container = NriInputs.gpuContainer("c1", POD, 1).build();
        Reply stop = peer.call("StateChange", StateChangeEvent.newBuilder().setEvent(10).setPod(POD).setContainer(container).build(),
                WAIT);
        Reply startWithoutContainer = peer.call("StateChange", StateChangeEvent.newBuilder().setEvent(6).setPod(POD).build(), WAIT);
        Reply dedicatedWithoutContainer = peer.call("StartContainer", StartContainerRequest.newBuilder().setPod(POD).build(), WAIT);
        Reply shutdown = peer.call("Shutdown", Empty.getDefaultInstance(), WAIT);

        for (Reply r : new Reply[] {stop, startWithoutContainer, dedicatedWithoutContainer, shutdown}) {
            assertThat(r.ok()).isTrue();
            assertThat(r.payload()).isEmpty();
        }
        assertThat(handler.drain(Duration.ofMillis(200))).isEmpty();
    }

    /**
     * NRI 0.12 takes an empty success to a dedicated call for the event handled: every method the
     * plugin does not implement gets ttrpc's Unimplemented (12), worded as ttrpc's server words it.
     */
    @Test
    void everyMethodThePluginDoesNotImplementIsAnsweredUnimplemented() throws Exception {
        Peer peer = configured(Duration.ofMillis(500), 2);
        byte[] start = StartContainerRequest.newBuilder().setPod(POD).setContainer(NriInputs.gpuContainer("c1", POD, 1)).build()
                .toByteArray();

        for (String method : java.util.List.of("RunPodSandbox", "UpdatePodSandbox", "PostUpdatePodSandbox", "StopPodSandbox",
                "RemovePodSandbox", "PostCreateContainer", "PostStartContainer", "UpdateContainer", "PostUpdateContainer",
                "StopContainer", "RemoveContainer", "ValidateContainerAdjustment", "SomethingNew", "startContainer")) {
            Reply reply = FakeNriRuntime.Peer.await(peer.send(FakeNriRuntime.PLUGIN, method, start, 0), WAIT);
            assertThat(reply.code()).as(method).isEqualTo(PluginMessages.UNIMPLEMENTED);
            assertThat(reply.message()).isEqualTo("method " + method);
            assertThat(reply.payload()).isEmpty();
        }
        Reply otherService = FakeNriRuntime.Peer.await(peer.send("some.Other", "Thing", new byte[] {1, 2, 3}, 0), WAIT);
        assertThat(otherService.code()).isEqualTo(PluginMessages.UNIMPLEMENTED);
        assertThat(otherService.message()).isEqualTo("service some.Other");
        assertThat(handler.drain(Duration.ofMillis(200))).isEmpty();
        assertThat(peer.startContainerDedicated(POD, NriInputs.gpuContainer("after", POD, 2).build(), WAIT).ok())
                .as("the session goes on").isTrue();
    }

    @Test
    void theDedicatedStartContainerOfNri012IsServedAsItsStateChangeForm() {
        Peer peer = configured(Duration.ofMillis(500), 2);

        Reply reply = peer.startContainerDedicated(POD, NriInputs.gpuContainer("c1", POD, 4242).build(), WAIT);

        assertThat(reply.ok()).isTrue();
        assertThat(reply.payload()).as("an empty StartContainerResponse").isEmpty();
        Started started = handler.await(Started.class, WAIT);
        assertThat(started.container().id()).isEqualTo("c1");
        assertThat(started.container().pid()).isEqualTo(4242);
        assertThat(started.answeredFirst()).isFalse();
        assertThat(started.deadlineNanos() - started.receivedNanos()).isBetween(0L, Duration.ofMillis(500).toNanos());
    }

    @Test
    void theDedicatedStartContainerPastItsDeadlineIsAnsweredByTheDeadline() {
        handler.onStart((pod, container, call) -> Thread.sleep(3000));
        Peer peer = configured(Duration.ofMillis(300), 2);

        Reply slow = peer.startContainerDedicated(POD, NriInputs.gpuContainer("slow", POD, 1).build(), WAIT);

        assertThat(slow.ok()).isTrue();
        assertThat(slow.nanos()).isBetween(Duration.ofMillis(250).toNanos(), Duration.ofMillis(1000).toNanos());
    }

    @Test
    void theRegistrationSaysWhichNriThePluginSpeaksAndTheHandlerHearsTheRuntimes() {
        Peer peer = connect(Duration.ofMillis(500), 2);

        assertThat(peer.awaitRegistration(WAIT).getNRIVersion()).isEqualTo("v0.12.0");
        peer.configure(ConfigureRequest.newBuilder().setRuntimeName("containerd").setRuntimeVersion("v2.3.4").setRequestTimeout(2000)
                .setNRIVersion("v0.12.0").build());
        assertThat(handler.await(Connected.class, WAIT).runtime())
                .isEqualTo(new NriRuntimeInfo("containerd", "v2.3.4", "v0.12.0", Duration.ofSeconds(2)));
    }

    /** Found: a request timeout of 2^63 ns or more overflowed the deadline's arithmetic and killed the reading thread. */
    @Test
    void aRequestTimeoutPastWhatNanosecondsHoldLeavesTheDeadlineAtTheBudget() throws Exception {
        handler.onStart((pod, container, call) -> Thread.sleep(3000));
        Peer peer = connect(Duration.ofMillis(300), 2);
        peer.awaitRegistration(WAIT);

        assertThat(peer.configure("containerd", "v9", 9_223_372_036_855L).ok()).isTrue();
        assertThat(handler.await(Connected.class, WAIT).runtime().requestTimeout()).isEqualTo(NriSession.MAX_REQUEST_TIMEOUT);
        Reply slow = peer.startContainer(POD, NriInputs.gpuContainer("slow", POD, 1).build(), WAIT);

        assertThat(slow.ok()).isTrue();
        assertThat(slow.nanos()).isBetween(Duration.ofMillis(250).toNanos(), Duration.ofMillis(1000).toNanos());
        assertThat(plugin.connected()).isTrue();
        assertThat(plugin.alive()).isTrue();
    }

    /** Any failure of the plugin's own code on the reading thread ends the session, as a lost connection would. */
    @Test
    void aFailureOnTheReadingThreadEndsTheSessionAndThePluginComesBack() throws Exception {
        java.util.concurrent.atomic.AtomicBoolean failed = new java.util.concurrent.atomic.AtomicBoolean();
        handler.onConnected(info -> {
            if (failed.compareAndSet(false, true)) {
                throw new ArithmeticException("long overflow");
            }
        });
        runtime = new FakeNriRuntime(dir.resolve("nri.sock"));
        plugin = new NriPlugin(dir.resolve("nri.sock"), handler, Duration.ofMillis(500), 2);
        plugin.start();
        Peer first = runtime.accept(WAIT);
        first.awaitRegistration(WAIT);
        // Configure is answered before the handler hears of it, but the plugin then closes the
        // connection, and a close can overtake that answer on the runtime's side: only the close counts.
        first.send(FakeNriRuntime.PLUGIN, "Configure", ConfigureRequest.newBuilder().setRuntimeName("containerd")
                .setRuntimeVersion("v2.1.9").setRegistrationTimeout(5000).setRequestTimeout(2000).build().toByteArray(),
                Duration.ofSeconds(5).toNanos());

        assertThat(first.closedByPlugin(WAIT)).isTrue();
        Peer second = runtime.accept(WAIT);
        second.awaitRegistration(WAIT);
        assertThat(second.configure("containerd", "v2.1.9", 2000).ok()).isTrue();
        assertThat(plugin.alive()).isTrue();
        assertThat(plugin.connected()).isTrue();
    }

    /** An Error kills the reading thread: the plugin says so, and the agent's liveness with it. */
    @Test
    void aReadingThreadThatDiesIsNotAlive() throws Exception {
        handler.onSynchronize(part -> {
            throw new StackOverflowError("test");
        });
        Peer peer = configured(Duration.ofMillis(500), 2);
        assertThat(plugin.alive()).isTrue();

        peer.send(FakeNriRuntime.PLUGIN, "Synchronize", SynchronizeRequest.getDefaultInstance().toByteArray(), 0);

        long deadline = System.nanoTime() + WAIT.toNanos();
        while (plugin.alive() && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertThat(plugin.alive()).isFalse();
    }

    @Test
    void aSecondConfigureIsAnsweredAndTheHandlerHearsOfTheConnectionOnce() throws Exception {
        Peer peer = configured(Duration.ofMillis(500), 2);

        Reply again = peer.configure("containerd", "v2.1.9", 600);

        assertThat(again.ok()).isTrue();
        assertThat(again.as(ConfigureResponse.parser()).getEvents()).isEqualTo(0x28);
        assertThat(handler.drain(Duration.ofMillis(200))).isEmpty();
        handler.onStart((pod, container, call) -> Thread.sleep(2000));
        Reply slow = peer.startContainer(POD, NriInputs.gpuContainer("slow", POD, 1).build(), WAIT);
        assertThat(slow.nanos()).as("the new timeout's half").isBetween(Duration.ofMillis(250).toNanos(), Duration.ofMillis(900).toNanos());
    }

    @Test
    void aStartBeforeConfigureIsServedWithNrisDefaultTimeout() throws Exception {
        Peer peer = connect(Duration.ofMillis(500), 2);
        peer.awaitRegistration(WAIT);

        Reply early = peer.startContainerDedicated(POD, NriInputs.gpuContainer("early", POD, 1).build(), WAIT);

        assertThat(early.ok()).isTrue();
        assertThat(handler.await(Started.class, WAIT).container().id()).isEqualTo("early");
    }

    /** Found: a runtime that began a message and never finished it held the reading thread forever. */
    @Test
    void aMessageBegunAndNeverFinishedEndsTheSessionAfterFiveSeconds() throws Exception {
        Peer first = configured(Duration.ofMillis(500), 2);

        // A frame that announces a 100-byte message and carries 10 bytes of it.
        first.raw(ByteBuffer.allocate(8 + 20).putInt(1).putInt(20).putInt(100).putInt(3).put((byte) 1).put((byte) 0)
                .put(new byte[10]).flip());

        long begun = System.nanoTime();
        assertThat(handler.await(Disconnected.class, Duration.ofSeconds(15)).why()).contains("not finished");
        long nanos = System.nanoTime() - begun;
        System.out.printf("[nri-plugin] a message begun and not finished: the session ended after %.1f s%n", nanos / 1e9);
        assertThat(Duration.ofNanos(nanos)).isBetween(Duration.ofSeconds(4), Duration.ofSeconds(8));
        Peer second = runtime.accept(WAIT);
        second.awaitRegistration(WAIT);
        first.close();
    }

    /** Found: a runtime that configured the plugin and closed at once was tried again every 100 ms, with four log lines each. */
    @Test
    void aRuntimeThatDropsThePluginRightAfterConfiguringItIsTriedLessAndLessOften() throws Exception {
        runtime = new FakeNriRuntime(dir.resolve("nri.sock"));
        plugin = new NriPlugin(dir.resolve("nri.sock"), handler, Duration.ofMillis(500), 2);
        plugin.start();
        java.util.List<Long> accepted = new java.util.ArrayList<>();
        for (int i = 0; i < 5; i++) {
            Peer peer = runtime.accept(WAIT);
            accepted.add(System.nanoTime());
            peer.awaitRegistration(WAIT);
            peer.configure("containerd", "v2.1.9", 2000);
            handler.await(Connected.class, WAIT);
            peer.close();
            handler.await(Disconnected.class, WAIT);
        }
        long lastGap = accepted.get(4) - accepted.get(3);
        System.out.printf("[nri-plugin] flapping runtime: gaps between connections %s ms%n",
                java.util.stream.IntStream.range(1, 5).mapToObj(i -> (accepted.get(i) - accepted.get(i - 1)) / 1_000_000).toList());
        assertThat(Duration.ofNanos(lastGap)).as("backed off, not 100 ms").isGreaterThan(Duration.ofMillis(700));
    }

    @Test
    void whenTheRuntimeGoesThePluginConnectsRegistersAndSynchronizesAgain() throws Exception {
        Peer first = connect(Duration.ofMillis(500), 2);
        first.awaitRegistration(WAIT);
        first.configure("containerd", "v2.1.9", 2000);
        handler.await(Connected.class, WAIT);

        first.close();
        assertThat(handler.await(Disconnected.class, WAIT).why()).contains("closed");
        Peer second = runtime.accept(WAIT);
        assertThat(second.awaitRegistration(WAIT).getPluginName()).isEqualTo("driver-alias");
        second.configure("containerd", "v2.1.9", 2000);
        handler.await(Connected.class, WAIT);
        second.synchronize(SynchronizeRequest.newBuilder().addContainers(NriInputs.gpuContainer("c1", POD, 5)).build());
        assertThat(handler.await(Synchronized.class, WAIT).part().containers()).hasSize(1);
        assertThat(plugin.connected()).isTrue();
    }

    @Test
    void aMissingSocketIsTriedAgainUntilTheRuntimeListens() throws Exception {
        plugin = new NriPlugin(dir.resolve("later.sock"), handler, Duration.ofMillis(500), 2);
        plugin.start();
        Thread.sleep(1500);
        assertThat(plugin.connected()).isFalse();

        runtime = new FakeNriRuntime(dir.resolve("later.sock"));
        long start = System.nanoTime();
        Peer peer = runtime.accept(WAIT);
        peer.awaitRegistration(WAIT);
        System.out.printf("[nri-plugin] socket appeared: the plugin connected %.0f ms later%n", (System.nanoTime() - start) / 1e6);
        assertThat(System.nanoTime() - start).isLessThan(Duration.ofMillis(1500).toNanos());
    }

    @Test
    void aFrameOverItsBoundEndsTheConnectionAndThePluginComesBack() throws Exception {
        Peer first = connect(Duration.ofMillis(500), 2);
        first.awaitRegistration(WAIT);
        first.configure("containerd", "v2.1.9", 2000);
        handler.await(Connected.class, WAIT);

        first.raw(ByteBuffer.allocate(8).putInt(1).putInt(MuxReader.MAX_FRAME + 1).flip());

        assertThat(first.closedByPlugin(WAIT)).isTrue();
        assertThat(handler.await(Disconnected.class, WAIT).why()).contains("protocol error", "frame");
        Peer second = runtime.accept(WAIT);
        second.awaitRegistration(WAIT);
    }

    @Test
    void aMessageOverTheBoundEndsTheConnectionWithoutReadingIt() throws Exception {
        Peer first = connect(Duration.ofMillis(500), 2);
        first.awaitRegistration(WAIT);
        first.configure("containerd", "v2.1.9", 2000);
        handler.await(Connected.class, WAIT);

        first.raw(ByteBuffer.allocate(18).putInt(1).putInt(10).putInt(MuxReader.MAX_MESSAGE + 1).putInt(3).put((byte) 1)
                .put((byte) 0).flip());

        assertThat(first.closedByPlugin(WAIT)).isTrue();
        assertThat(handler.await(Disconnected.class, WAIT).why()).contains("over the bound");
    }

    @Test
    void aRuntimeThatStopsReadingThePluginsAnswersIsLeftAfterFiveSeconds() throws Exception {
        Peer first = connect(Duration.ofMillis(500), 2);
        first.awaitRegistration(WAIT);
        first.configure("containerd", "v2.1.9", 2000);
        handler.await(Connected.class, WAIT);

        first.pauseReading();
        Thread flood = new Thread(() -> {
            try {
                for (int i = 0; i < 200_000; i++) {
                    first.send("some.Other", "Flood", new byte[0], 0);
                }
            } catch (RuntimeException closed) {
                // the plugin left: the flood ends
            }
        });
        flood.setDaemon(true);
        flood.start();

        assertThat(handler.await(Disconnected.class, Duration.ofSeconds(20)).why()).contains("has not read");
        Peer second = runtime.accept(WAIT);
        second.awaitRegistration(WAIT);
        first.close();
    }

    @Test
    void aRuntimeThatNeverConfiguresThePluginIsLeftAfterFiveSeconds() throws Exception {
        Peer first = connect(Duration.ofMillis(500), 2);
        first.awaitRegistration(WAIT);

        assertThat(first.closedByPlugin(Duration.ofSeconds(8))).isTrue();
        Peer second = runtime.accept(WAIT);
        second.awaitRegistration(WAIT);
        assertThat(handler.drain(Duration.ofMillis(100))).isEmpty();
    }

    @Test
    void closeEndsThePluginPromptlyConnectedOrNot() throws Exception {
        Peer peer = configured(Duration.ofMillis(500), 2);

        long start = System.nanoTime();
        plugin.close();
        assertThat(System.nanoTime() - start).isLessThan(Duration.ofSeconds(1).toNanos());
        assertThat(peer.closedByPlugin(WAIT)).isTrue();
        assertThat(plugin.connected()).isFalse();

        NriPlugin retrying = new NriPlugin(dir.resolve("never.sock"), handler);
        retrying.start();
        Thread.sleep(300);
        start = System.nanoTime();
        retrying.close();
        assertThat(System.nanoTime() - start).isLessThan(Duration.ofSeconds(1).toNanos());
    }

    @Test
    void callsInFlightWhenTheConnectionBreaksDoNotStopThePlugin() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        handler.onStart((pod, container, call) -> {
            entered.countDown();
            Thread.sleep(200);
        });
        Peer first = connect(Duration.ofMillis(500), 2);
        first.awaitRegistration(WAIT);
        first.configure("containerd", "v2.1.9", 2000);
        handler.await(Connected.class, WAIT);
        CompletableFuture<Reply> inFlight = first.startContainerAsync(POD, NriInputs.gpuContainer("c1", POD, 1).build());
        entered.await();
        first.close();
        assertThat(inFlight).failsWithin(WAIT);

        Peer second = runtime.accept(WAIT);
        second.awaitRegistration(WAIT);
        second.configure("containerd", "v2.1.9", 2000);
        assertThat(second.startContainer(POD, NriInputs.gpuContainer("c2", POD, 2).build(), WAIT).ok()).isTrue();
    }
}
