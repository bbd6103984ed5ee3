package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.testing.Timing;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An API server that fails, refuses or hangs must never slow down the callers (the repair
 * workers), and each Event must still end up counted exactly once.
 */
@Timeout(60)
@Timing
class Fabric8PodEventsFailureTest {

    private static final Duration WAIT = Duration.ofSeconds(20);
    /** Against a server that hangs: short, so that the tests measure bounds, not waits. */
    private static final Duration REQUEST_TIMEOUT = Duration.ofMillis(300);
    /**
     * Against a server that answers: long enough that its answer is what the client sees. With
     * 300 ms, beside two busy loops, a 403 came after the timeout once, and the timeout (rightly)
     * was tried again: two requests where the refusal alone must make one.
     */
    private static final Duration ANSWERED_TIMEOUT = Duration.ofSeconds(10);
    /** Retries in milliseconds, so that the tests measure bounds, not backoff. */
    private static final Fabric8PodEvents.Settings FAST = Fabric8PodEvents.Settings.DEFAULTS
            .withRetries(3, Duration.ofMillis(5))
            .withCloseTimeout(Duration.ofMillis(500));

    private final FakeRepairMetrics metrics = new FakeRepairMetrics();
    private final MutableClock clock = new MutableClock(Instant.parse("2024-05-01T10:00:00Z"));
    private StubApiServer server;
    private Fabric8PodEvents events;

    @AfterEach
    void stop() {
        if (events != null) {
            events.close();
        }
        if (server != null) {
            server.close();
        }
    }

    private void start(StubApiServer stub, Fabric8PodEvents.Settings settings) {
        start(stub, settings, ANSWERED_TIMEOUT);
    }

    private void startHanging(Fabric8PodEvents.Settings settings) throws IOException {
        start(StubApiServer.hanging(), settings, REQUEST_TIMEOUT);
    }

    private void start(StubApiServer stub, Fabric8PodEvents.Settings settings, Duration requestTimeout) {
        server = stub;
        Config config = new ConfigBuilder(Config.empty()).withAutoConfigure(false).withMasterUrl(stub.url()).build();
        events = Fabric8PodEvents.start(KubernetesClients.build(config, requestTimeout), "node-1", metrics, clock,
                settings);
    }

    @Test
    void serverErrorsAreRetriedThreeTimesThenCountedAsFailed() throws Exception {
        start(StubApiServer.failing(500, Integer.MAX_VALUE), FAST);

        events.repaired(Reports.container("ml", "p", "c"), Reports.repaired());
        metrics.awaitEventsTotal(1, WAIT);

        assertThat(metrics.events("failed")).isEqualTo(1);
        assertThat(server.requests()).containsExactly(
                "POST /api/v1/namespaces/ml/events",
                "POST /api/v1/namespaces/ml/events",
                "POST /api/v1/namespaces/ml/events");
    }

    @Test
    void aServerThatRecoversWithinTheAttemptsGetsTheEvent() throws Exception {
        start(StubApiServer.failing(503, 2), FAST);

        events.repaired(Reports.container("ml", "p", "c"), Reports.repaired());
        metrics.awaitEventsTotal(1, WAIT);

        assertThat(metrics.events("sent")).isEqualTo(1);
        assertThat(server.requests()).hasSize(3);
    }

    @Test
    void aRefusalIsNotRetried() throws Exception {
        // 403: the ClusterRole is missing; asking again will not help
        start(StubApiServer.failing(403, Integer.MAX_VALUE), FAST);

        events.failed(Reports.container("ml", "p", "c"), Reports.readOnly());
        metrics.awaitEventsTotal(1, WAIT);

        assertThat(metrics.events("failed")).isEqualTo(1);
        assertThat(server.requests()).hasSize(1);
    }

    @Test
    void aHangingServerTimesOutWithinTheAttemptsAndIsCountedAsFailed() throws Exception {
        startHanging(FAST);

        long began = System.nanoTime();
        events.repaired(Reports.container("ml", "p", "c"), Reports.repaired());
        metrics.awaitEventsTotal(1, WAIT);
        Duration took = Duration.ofNanos(System.nanoTime() - began);

        assertThat(metrics.events("failed")).isEqualTo(1);
        assertThat(server.requests()).hasSize(3);
        // three request timeouts and two short backoffs, not a hang
        assertThat(took).isLessThan(REQUEST_TIMEOUT.multipliedBy(3).plusSeconds(3));
        System.out.printf("hanging API server: one Event given up after 3 attempts in %d ms%n", took.toMillis());
    }

    @Test
    void callersDoNotWaitForAHangingServer() throws Exception {
        startHanging(FAST);
        int calls = 200;

        long[] each = new long[calls];
        long began = System.nanoTime();
        for (int i = 0; i < calls; i++) {
            long t = System.nanoTime();
            events.repaired(Reports.container("ml", "pod-" + i, "main"), Reports.repaired());
            each[i] = System.nanoTime() - t;
        }
        long total = System.nanoTime() - began;
        long max = java.util.Arrays.stream(each).max().orElseThrow();

        System.out.printf("hanging API server: %d calls to repaired() took %.3f ms in all, %.2f us per call,"
                + " %.3f ms the slowest%n", calls, total / 1e6, total / 1e3 / calls, max / 1e6);
        assertThat(Duration.ofNanos(total)).isLessThan(Duration.ofMillis(200));

        server.awaitRequests(1, WAIT);
        long closing = System.nanoTime();
        events.close();
        Duration closeTook = Duration.ofNanos(System.nanoTime() - closing);
        System.out.printf("hanging API server: close() returned in %d ms%n", closeTook.toMillis());
        // the drain budget, an interrupt, and a second at most to stop
        assertThat(closeTook).isLessThan(FAST.closeTimeout().plusSeconds(2));
        // nothing is lost without being counted
        assertThat(metrics.eventsTotal()).isEqualTo(calls);
        assertThat(metrics.events("sent")).isZero();
    }

    @Test
    void aFullQueueDropsAndCountsWithoutBlocking() throws Exception {
        int capacity = 4;
        startHanging(FAST.withQueueCapacity(capacity));
        ContainerRef first = Reports.container("ml", "first", "main");

        events.repaired(first, Reports.repaired());
        // the sender has taken it and is waiting for the server: the queue is empty now
        server.awaitRequests(1, WAIT);
        for (int i = 0; i < capacity + 10; i++) {
            events.repaired(Reports.container("ml", "pod-" + i, "main"), Reports.repaired());
        }

        assertThat(metrics.events("dropped")).isEqualTo(10);
    }
}
