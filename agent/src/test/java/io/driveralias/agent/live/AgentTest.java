package io.driveralias.agent.live;

import static io.driveralias.agent.live.FakeAgentMetrics.await;
import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.kube.PodEvents;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The daemon's orchestration, against a fake Docker and container roots on disk. */
@Timeout(30)
class AgentTest {

    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final Instant STARTED = Instant.parse("2026-11-30T10:00:00Z");

    @TempDir
    Path dir;

    private final FakeRuntime docker = new FakeRuntime();
    private final FakeAgentMetrics metrics = new FakeAgentMetrics();
    private ContainerFixtures fixtures;
    private Agent agent;

    @BeforeEach
    void setUp() throws Exception {
        fixtures = new ContainerFixtures(dir);
    }

    @AfterEach
    void stop() {
        if (agent != null) {
            agent.close();
        }
    }

    private void start(int workers, int queueCapacity) throws InterruptedException {
        agent = new Agent(List.of(new Agent.Watched(docker, new RuntimeEvents(docker), fixtures.repairer(docker, null))),
                new ExaminationReporter(metrics, PodEvents.NOOP), metrics, Clock.systemUTC(), workers,
                Duration.ofHours(1), Duration.ofSeconds(2),
                new Agent.Tuning(queueCapacity, Duration.ofMillis(250), 0, Duration.ofMillis(20)), Optional.empty());
        agent.start();
        await("ready", WAIT, agent::ready);
    }

    private ContainerInfo running() throws Exception {
        ContainerInfo c = fixtures.gpuContainer(ContainerFixtures.newId(), STARTED);
        docker.put(c);
        return c;
    }

    private static ContainerInfo created(ContainerInfo c) {
        return c.toBuilder().running(false).pid(0).startedAt(Optional.empty()).build();
    }

    private boolean linked(ContainerInfo c) {
        return Files.isSymbolicLink(fixtures.libraryDirectory(c).resolve(ContainerFixtures.ALIAS));
    }

    @Test
    void createAndStartOfOneContainerAreOneExaminationCountedOnce() throws Exception {
        start(2, 100);
        ContainerInfo c = running();

        docker.emit(c.id(), "create", "1.1");
        docker.emit(c.id(), "start", "1.2");

        await("repaired", WAIT, () -> metrics.examined().size() == 1);
        Thread.sleep(400);
        assertThat(metrics.examined()).containsExactly(ContainerOutcome.REPAIRED);
        assertThat(metrics.created()).containsExactly(ContainerFixtures.ALIAS);
        assertThat(docker.inspects(c.id())).as("one examination (three inspects through the merged view)")
                .isEqualTo(3);
        assertThat(linked(c)).isTrue();
    }

    @Test
    void aCreateSeenAloneAndItsLaterStartAreCountedOnce() throws Exception {
        start(2, 100);
        ContainerInfo c = fixtures.gpuContainer(ContainerFixtures.newId(), STARTED);
        docker.put(created(c));

        docker.emit(c.id(), "create", "1.1");
        // Without repair before start a create has nothing to do: no inspect (which a start in
        // progress would hold), nothing counted.
        Thread.sleep(200);
        assertThat(docker.inspects(c.id())).isZero();
        assertThat(metrics.examined()).isEmpty();

        docker.put(c);
        docker.emit(c.id(), "start", "1.2");
        // The same start seen again (a replayed event) adds nothing.
        await("repaired", WAIT, () -> metrics.examined().size() == 1);
        docker.emit(c.id(), "start", "1.2");
        await("the replay examined", WAIT, () -> docker.inspects(c.id()) == 4);
        Thread.sleep(100);
        assertThat(metrics.examined()).containsExactly(ContainerOutcome.REPAIRED);
    }

    @Test
    void aReconcileRetriesOnlyFailedContainersAndCountsEachStartOncePerOutcome() throws Exception {
        ContainerInfo good = running();
        ContainerInfo bad = running();
        Path conflict = Files.createDirectory(fixtures.libraryDirectory(bad).resolve(ContainerFixtures.ALIAS));
        start(2, 100);
        await("first reconcile examined both", WAIT, () -> metrics.examined().size() == 2);
        assertThat(metrics.examined()).containsExactlyInAnyOrder(ContainerOutcome.REPAIRED, ContainerOutcome.FAILED);
        assertThat(metrics.unrepaired()).containsExactly(bad.id());
        int goodInspects = docker.inspects(good.id());
        int badInspects = docker.inspects(bad.id());

        agent.reconcile(false);
        await("the failed one retried", WAIT, () -> docker.inspects(bad.id()) > badInspects + 2);
        Thread.sleep(100);
        assertThat(docker.inspects(good.id())).as("a verified start is left alone").isEqualTo(goodInspects);
        assertThat(metrics.examined()).as("failed again: not counted again").hasSize(2);

        Files.delete(conflict);
        agent.reconcile(false);
        await("repaired at last", WAIT, () -> metrics.examined(ContainerOutcome.REPAIRED) == 2);
        assertThat(metrics.unrepaired()).isEmpty();
        assertThat(linked(bad)).isTrue();
    }

    @Test
    void afterAReconnectEveryRunningContainerIsExaminedAgainAndEventsResumeWhereTheyStopped() throws Exception {
        start(2, 100);
        ContainerInfo first = running();
        docker.emit(first.id(), "start", "1700000000.000000001");
        await("first repaired", WAIT, () -> metrics.examined().size() == 1);
        int listsBefore = docker.lists();
        int inspectsBefore = docker.inspects(first.id());

        // Docker restarts; a container starts while the agent is away: no event for it.
        docker.breakStream();
        ContainerInfo during = running();

        await("reconnected and reconciled", WAIT, () -> docker.lists() > listsBefore);
        await("missed container repaired", WAIT, () -> linked(during));
        await("the known one looked at again", WAIT, () -> docker.inspects(first.id()) > inspectsBefore);
        assertThat(docker.subscriptions()).containsExactly(Optional.empty(), Optional.of("1700000000.000000001"));
        Thread.sleep(100);
        assertThat(metrics.examined()).as("each start counted once")
                .containsExactly(ContainerOutcome.REPAIRED, ContainerOutcome.REPAIRED);
    }

    @Test
    void aGpuContainerThatVanishesDuringItsRepairIsGoneNeitherMissedNorFailed() throws Exception {
        start(2, 100);
        ContainerInfo c = running();
        docker.afterInspect(c.id(), 1, info -> null);

        docker.emit(c.id(), "start", "1.1");

        await("examined", WAIT, () -> metrics.examined().size() == 1);
        assertThat(metrics.examined()).containsExactly(ContainerOutcome.GONE);
        assertThat(metrics.unrepaired()).isEmpty();
    }

    /** A crash loop: a restart gone before it is examined kept the aliases its first start got. */
    @Test
    void aRepairedContainerRestartedAndGoneBeforeItsExaminationIsNoMiss() throws Exception {
        start(2, 100);
        ContainerInfo c = running();
        docker.emit(c.id(), "start", "1.1");
        await("repaired", WAIT, () -> metrics.examined().size() == 1);
        // That start ended, and its start event was seen again (a replay, a resync): still repaired.
        docker.put(c.toBuilder().running(false).pid(0).build());
        int replayed = docker.inspects(c.id());
        docker.emit(c.id(), "start", "1.1");
        await("the replay examined", WAIT, () -> docker.inspects(c.id()) > replayed);
        Thread.sleep(200);

        // Restarted, and exited again before the agent took the start: its last start, not running.
        docker.put(c.toBuilder().running(false).pid(0).startedAt(Optional.of(STARTED.plusSeconds(1))).build());
        int inspects = docker.inspects(c.id());
        docker.emit(c.id(), "start", "1.2");
        await("the restart examined", WAIT, () -> docker.inspects(c.id()) > inspects);
        Thread.sleep(200);

        assertThat(metrics.examined()).as("no miss, no alarm").containsExactly(ContainerOutcome.REPAIRED);
        assertThat(metrics.unrepaired()).isEmpty();
    }

    @Test
    void aFailedContainerThatAStaleListNoLongerShowsIsJudgedByItsOwnStateAndRetried() throws Exception {
        ContainerInfo bad = running();
        Path conflict = Files.createDirectory(fixtures.libraryDirectory(bad).resolve(ContainerFixtures.ALIAS));
        start(2, 100);
        await("failed", WAIT, () -> metrics.unrepaired().contains(bad.id()));
        // The list says it is not running (Docker's on a full disk); the container says it is.
        docker.hideFromList(bad.id());

        agent.reconcile(false);
        Thread.sleep(200);
        assertThat(metrics.unrepaired()).as("its series stays while it runs unrepaired").containsExactly(bad.id());

        Files.delete(conflict);
        agent.reconcile(false);
        await("repaired at last", WAIT, () -> linked(bad));
        await("its series gone", WAIT, () -> metrics.unrepaired().isEmpty());

        // Really gone now: examined once more, then left alone.
        docker.remove(bad.id());
        agent.reconcile(false);
        int inspects = docker.inspects(bad.id());
        agent.reconcile(false);
        Thread.sleep(200);
        assertThat(docker.inspects(bad.id())).isLessThanOrEqualTo(inspects + 1);
    }

    @Test
    void aContainerTheRuntimeDidNotAnswerForIsTriedAgainWithinASecondNotAtTheNextResync() throws Exception {
        start(2, 100);
        ContainerInfo c = running();
        docker.failDescribes(c.id(), 1);

        long begun = System.nanoTime();
        docker.emit(c.id(), "start", "1.1");

        await("repaired on the second try", WAIT, () -> linked(c) && metrics.examined().size() == 1);
        assertThat(Duration.ofNanos(System.nanoTime() - begun)).as("the resync is an hour away").isLessThan(Duration.ofSeconds(3));
        assertThat(metrics.examined()).containsExactly(ContainerOutcome.REPAIRED);
        assertThat(metrics.failures()).as("an answered retry is no failure").isEmpty();
    }

    @Test
    void aRuntimeThatKeepsFailingOneContainerWhileUpIsCountedOnceAsItsErrorAndTheContainerLeftForTheReconcile()
            throws Exception {
        start(2, 100);
        ContainerInfo c = running();
        docker.failDescribes(c.id(), RuntimeErrors.RETRIES.size() + 1);

        docker.emit(c.id(), "start", "1.1");

        await("the tries spent", Duration.ofSeconds(15), () -> !metrics.failures().isEmpty());
        Thread.sleep(300);
        assertThat(metrics.failures()).containsExactly(io.driveralias.agent.core.FailureReason.DOCKER_ERROR);
        assertThat(docker.inspects(c.id())).isEqualTo(RuntimeErrors.RETRIES.size() + 1);
        assertThat(metrics.examined()).as("nothing known of it to report").isEmpty();

        agent.reconcile(false);
        await("repaired at the reconcile", WAIT, () -> linked(c) && metrics.examined().size() == 1);
    }

    @Test
    void aRuntimeThatStopsAnsweringLeavesItsContainersToItsReturnWithoutCountingThem() throws Exception {
        start(2, 100);
        ContainerInfo c = running();
        docker.answersPing(false);
        await("unready", WAIT, () -> !agent.ready());
        docker.failDescribes(c.id(), RuntimeErrors.RETRIES.size() + 1);

        docker.emit(c.id(), "start", "1.1");
        await("the tries spent", Duration.ofSeconds(15), () -> docker.inspects(c.id()) == RuntimeErrors.RETRIES.size() + 1);
        Thread.sleep(300);
        assertThat(metrics.failures()).as("the outage has its own alert").isEmpty();

        docker.answersPing(true);
        await("repaired once the runtime answers again", WAIT, () -> linked(c) && metrics.examined().size() == 1);
    }

    @Test
    void workRefusedByAFullQueueIsCounted() throws Exception {
        start(0, 1);
        docker.emit(ContainerFixtures.newId(), "start", "1.1");
        docker.emit(ContainerFixtures.newId(), "start", "1.2");
        docker.emit(ContainerFixtures.newId(), "start", "1.3");

        await("two refused", WAIT, () -> metrics.refused() == 2);
        running();
        agent.reconcile(false);
        assertThat(metrics.refused()).isEqualTo(3);
    }

    @Test
    void twoRuntimesFeedOneQueueAndTheAgentIsReadyOnlyWhileBothAre() throws Exception {
        FakeRuntime containerd = new FakeRuntime("containerd");
        agent = new Agent(List.of(new Agent.Watched(docker, new RuntimeEvents(docker), fixtures.repairer(docker, null)),
                new Agent.Watched(containerd, new RuntimeEvents(containerd), fixtures.repairer(containerd, null))),
                new ExaminationReporter(metrics, PodEvents.NOOP), metrics, Clock.systemUTC(), 2, Duration.ofHours(1),
                Duration.ofSeconds(2), new Agent.Tuning(100, Duration.ZERO, 0, Duration.ofMillis(20)), Optional.empty());
        agent.start();
        await("ready", WAIT, agent::ready);
        ContainerInfo inDocker = running();
        ContainerInfo inContainerd = fixtures.gpuContainer(ContainerFixtures.newId(), STARTED);
        containerd.put(inContainerd);

        docker.emit(inDocker.id(), "start", "1.1");
        containerd.emit(inContainerd.id(), "task-create", "");

        await("both repaired", WAIT, () -> linked(inDocker) && linked(inContainerd));
        assertThat(containerd.inspects(inContainerd.id())).as("asked of its own runtime").isPositive();
        assertThat(docker.inspects(inContainerd.id())).isZero();
        containerd.answersPing(false);
        await("unready while containerd does not answer", WAIT, () -> !agent.ready());
        assertThat(metrics.dockerUp()).as("Docker itself is fine").isTrue();
        containerd.answersPing(true);
        await("ready again", WAIT, agent::ready);
    }

    @Test
    void inAPodTheAgentIsReadyOnlyOnceAWatchedRuntimeRunsItsOwnPod() throws Exception {
        String uid = "0f6c4e52-1a2b-4c3d-9e8f-0123456789ab";
        FakeRuntime containerd = new FakeRuntime("containerd");
        agent = new Agent(List.of(new Agent.Watched(docker, new RuntimeEvents(docker), fixtures.repairer(docker, null))),
                new ExaminationReporter(metrics, PodEvents.NOOP), metrics, Clock.systemUTC(), 1, Duration.ofMillis(100),
                Duration.ofSeconds(2), new Agent.Tuning(100, Duration.ZERO, 0, Duration.ofMillis(20)), Optional.of(uid));
        // The agent's pod runs in containerd, which it does not watch.
        containerd.put(ContainerInfo.builder("agent").labels(java.util.Map.of("io.kubernetes.pod.uid", uid)).running(true)
                .build());
        agent.start();
        await("its own pod looked for", WAIT, () -> metrics.ownPodVisible() != null);
        Thread.sleep(300);
        assertThat(agent.ready()).as("watching Docker only, its pod in containerd").isFalse();
        assertThat(metrics.ownPodVisible()).isFalse();

        // The kubelet's runtime is Docker after all (or the agent watches it): found at a reconcile, ready.
        docker.put(ContainerInfo.builder("agent").labels(java.util.Map.of("io.kubernetes.pod.uid", uid)).running(true)
                .build());
        await("ready", WAIT, agent::ready);
        assertThat(metrics.ownPodVisible()).isTrue();
    }

    @Test
    void aDaemonThatStopsAnsweringPingsMakesTheAgentUnready() throws Exception {
        start(1, 10);
        docker.answersPing(false);
        await("unready", WAIT, () -> !agent.ready() && !metrics.dockerUp());
        docker.answersPing(true);
        await("ready again", WAIT, () -> agent.ready() && metrics.dockerUp());
    }
}
