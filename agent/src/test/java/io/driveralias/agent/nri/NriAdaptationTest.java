package io.driveralias.agent.nri;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.nri.AdaptationRuntime.Api;
import io.driveralias.agent.nri.AdaptationRuntime.Event;
import io.driveralias.agent.nri.AdaptationRuntime.Outcome;
import io.driveralias.agent.nri.FakeNriHandler.Connected;
import io.driveralias.agent.nri.FakeNriHandler.Created;
import io.driveralias.agent.nri.FakeNriHandler.Started;
import io.driveralias.agent.testing.Timing;
import io.driveralias.agent.testing.nri.Container;
import io.driveralias.agent.testing.nri.PodSandbox;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The plugin against a runtime that follows NRI's {@code pkg/adaptation} call for call
 * ({@link AdaptationRuntime}), in both forms runtimes speak: StateChange (NRI 0.6 to 0.11,
 * containerd 1.7 to 2.2) and the dedicated calls of NRI 0.12 (containerd 2.3). What an operator
 * relies on: on either, every GPU start reaches the handler inside the runtime's call, no runtime
 * logs a deprecation for the plugin, and the plugin is never dropped nor a container failed.
 */
@Timeout(60)
@Timing
class NriAdaptationTest {

    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final Duration REGISTRATION = Duration.ofSeconds(5);
    private static final Duration REQUEST = Duration.ofSeconds(2);
    private static final PodSandbox POD = NriInputs.pod("train");

    @TempDir
    Path dir;

    private NriPlugin plugin;
    private FakeNriRuntime socket;
    private final FakeNriHandler handler = new FakeNriHandler();

    @AfterEach
    void stop() {
        if (plugin != null) {
            plugin.close();
        }
        if (socket != null) {
            socket.close();
        }
    }

    /** The plugin started against a runtime of {@code api}, registered and configured by its rules. */
    private AdaptationRuntime runtime(Api api, Duration budget) {
        socket = new FakeNriRuntime(dir.resolve("nri.sock"));
        plugin = new NriPlugin(dir.resolve("nri.sock"), handler, budget, 2);
        plugin.start();
        AdaptationRuntime runtime = api == Api.DEDICATED
                ? AdaptationRuntime.start(socket, api, REGISTRATION, REQUEST, "v2.3.4", "v0.12.0")
                : AdaptationRuntime.start(socket, api, REGISTRATION, REQUEST, "v2.1.9", "");
        handler.await(Connected.class, WAIT);
        return runtime;
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(Api.class)
    void registersByTheRuntimesRulesAndSubscribesToCreateAndStartAlone(Api api) {
        AdaptationRuntime runtime = runtime(api, Duration.ofMillis(500));

        assertThat(runtime.registration().getPluginName()).isEqualTo(NriPlugin.NAME);
        assertThat(runtime.registration().getPluginIdx()).isEqualTo(NriPlugin.INDEX);
        assertThat(runtime.registration().getNRIVersion()).as("logged by NRI 0.12 runtimes, unknown before")
                .isEqualTo(NriSession.NRI_VERSION);
        for (Event event : Event.values()) {
            assertThat(runtime.subscribed(event)).as(event.name())
                    .isEqualTo(event == Event.CREATE_CONTAINER || event == Event.START_CONTAINER);
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(Api.class)
    void everyGpuStartReachesTheHandlerInsideTheRuntimesCallAndNoDeprecationIsLogged(Api api) {
        AdaptationRuntime runtime = runtime(api, Duration.ofMillis(500));

        for (int i = 0; i < 5; i++) {
            Container gpu = NriInputs.gpuContainer("gpu-" + i, POD, 100 + i).build();
            assertThat(runtime.createContainer(POD, gpu)).isEqualTo(Outcome.HANDLED);
            assertThat(handler.await(Created.class, WAIT).container().id()).isEqualTo("gpu-" + i);
            assertThat(runtime.startContainer(POD, gpu)).isEqualTo(Outcome.HANDLED);
            Started started = handler.await(Started.class, WAIT);
            assertThat(started.container().id()).isEqualTo("gpu-" + i);
            assertThat(started.answeredFirst()).as("the handler ran inside the runtime's call").isFalse();
        }

        String start = api == Api.DEDICATED ? "StartContainer" : "StateChange(StartContainer)";
        assertThat(runtime.calls()).as("one call per event, in the form the runtime speaks").containsExactly(
                "CreateContainer", start, "CreateContainer", start, "CreateContainer", start, "CreateContainer", start,
                "CreateContainer", start);
        assertThat(runtime.deprecationWarnings()).isEmpty();
        assertThat(runtime.dropped()).isFalse();
    }

    @Test
    void aHandlerPastItsDeadlineIsAnsweredInTimeSoThatTheRuntimeNeverDropsThePlugin() {
        handler.onStart((pod, container, call) -> Thread.sleep(3000));
        AdaptationRuntime runtime = runtime(Api.DEDICATED, Duration.ofMillis(500));

        long begun = System.nanoTime();
        Outcome slow = runtime.startContainer(POD, NriInputs.gpuContainer("slow", POD, 1).build());
        long nanos = System.nanoTime() - begun;

        assertThat(slow).isEqualTo(Outcome.HANDLED);
        assertThat(Duration.ofNanos(nanos)).as("the plugin's deadline, well inside the runtime's 2 s")
                .isBetween(Duration.ofMillis(400), Duration.ofMillis(1500));
        assertThat(runtime.startContainer(POD, NriInputs.gpuContainer("next", POD, 2).build())).isEqualTo(Outcome.HANDLED);
        assertThat(runtime.dropped()).isFalse();
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(Api.class)
    void aStartWithoutAGpuAskIsAnsweredAtOnceInEitherForm(Api api) {
        handler.wantsStart(container -> false);
        AdaptationRuntime runtime = runtime(api, Duration.ofMillis(500));

        long begun = System.nanoTime();
        assertThat(runtime.startContainer(POD, NriInputs.plainContainer("plain", POD, 7).build())).isEqualTo(Outcome.HANDLED);

        assertThat(Duration.ofNanos(System.nanoTime() - begun)).isLessThan(Duration.ofMillis(400));
        assertThat(handler.await(FakeNriHandler.AnsweredAtOnce.class, WAIT).container().id()).isEqualTo("plain");
    }

    @Test
    void aRuntimeThatDropsThePluginGetsItBackRegisteredAndSynchronizable() {
        AdaptationRuntime first = runtime(Api.DEDICATED, Duration.ofMillis(500));
        first.peer().close();
        handler.await(FakeNriHandler.Disconnected.class, WAIT);

        AdaptationRuntime second = AdaptationRuntime.start(socket, Api.DEDICATED, REGISTRATION, REQUEST, "v2.3.4", "v0.12.0");
        handler.await(Connected.class, WAIT);
        assertThat(second.startContainer(POD, NriInputs.gpuContainer("after", POD, 3).build())).isEqualTo(Outcome.HANDLED);
        assertThat(handler.await(Started.class, WAIT).container().id()).isEqualTo("after");
    }

    /**
     * A runtime that got the plugin's mask wrong and relays an event it never subscribed to: the
     * plugin answers the dedicated method Unimplemented, as a ttrpc server without it would, the
     * runtime retries as StateChange (the answer to an event other than a start is an empty
     * success) and logs its deprecation line. Never an empty success to the dedicated call, which
     * would pass for the event handled; never an error the container would fail on.
     */
    @Test
    void anEventThePluginNeverSubscribedToGoesBackToStateChangeAndFailsNoContainer() throws Exception {
        AdaptationRuntime runtime = runtime(Api.DEDICATED, Duration.ofMillis(500));

        Outcome outcome = runtime.relayEvenUnsubscribed(Event.POST_START_CONTAINER, POD, NriInputs.gpuContainer("c", POD, 1).build());

        assertThat(outcome).isEqualTo(Outcome.HANDLED);
        assertThat(runtime.calls()).containsExactly("PostStartContainer", "StateChange(PostStartContainer)");
        assertThat(runtime.deprecationWarnings()).hasSize(1);
        assertThat(handler.drain(Duration.ofMillis(200))).isEmpty();
        assertThat(runtime.startContainer(POD, NriInputs.gpuContainer("gpu", POD, 2).build())).isEqualTo(Outcome.HANDLED);
        assertThat(handler.await(Started.class, WAIT).container().id()).isEqualTo("gpu");
    }
}
