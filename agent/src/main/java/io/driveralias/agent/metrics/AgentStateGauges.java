package io.driveralias.agent.metrics;

import io.driveralias.agent.core.HostDriverState;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;

/**
 * The series of the agent's own state: its resync interval, its last full reconcile, whether it
 * sees its own pod, the host's driver files and their state. Apart from {@link MicrometerRepairMetrics} because,
 * unlike the counters there (all at 0 from the start), each of these is registered only once the
 * agent tells it: a 0 before that would read as a reconcile in 1970 or a pod not found, and page
 * someone while the agent is still starting.
 */
final class AgentStateGauges {

    private static final String RESYNC_INTERVAL = "driver.alias.resync.interval.seconds";
    private static final String HOST_DRIVER_FILES = "driver.alias.host.driver.files";
    private static final String UNMATCHED_DRIVER_FILES = "driver.alias.unmatched.driver.files";
    private static final String HOST_DRIVER_STATE = "driver.alias.host.driver.state";
    private static final String OWN_POD_VISIBLE = "driver.alias.own.pod.visible";
    private static final String RECONCILE_LAST_SUCCESS = "driver.alias.reconcile.last.success.timestamp.seconds";

    private final MeterRegistry registry;
    /** Outside a pod the agent never asks, and the series does not exist. */
    private final AtomicInteger ownPod = new AtomicInteger();
    private final AtomicBoolean ownPodGauge = new AtomicBoolean();
    /** Milliseconds of --resync-interval; the gauge is registered when it is first set. */
    private final AtomicLong resyncMillis = new AtomicLong(-1);
    private final AtomicReference<Instant> lastReconcile = new AtomicReference<>();
    /** The one series of the node's driver state, replaced when it changes; none before the first look. */
    private Meter hostDriverState;

    AgentStateGauges(MeterRegistry registry) {
        this.registry = registry;
    }

    void resyncInterval(Duration interval) {
        // Registered once told, not before: the alert that uses it must not see a 0.
        if (resyncMillis.getAndSet(interval.toMillis()) >= 0) {
            return;
        }
        Gauge.builder(RESYNC_INTERVAL, resyncMillis, millis -> millis.get() / 1000.0)
                .description("The configured period of the full reconcile (--resync-interval)")
                .strongReference(true)
                .register(registry);
    }

    /** What {@code driver_alias_unmatched_driver_files_total} reads, held as long as these meters. */
    private volatile LongSupplier unmatchedSource;

    void hostDriverFiles(IntSupplier found, LongSupplier unmatched) {
        Gauge.builder(HOST_DRIVER_FILES, found, f -> f.getAsInt())
                .description("The driver's files the agent found on the host; 0: it can repair no container")
                .strongReference(true)
                .register(registry);
        // Micrometer holds a function counter's object weakly (its builder cannot say otherwise): kept
        // here, or once the collector took this method reference the counter would show 0 for good.
        unmatchedSource = unmatched;
        FunctionCounter.builder(UNMATCHED_DRIVER_FILES, unmatched, u -> u.getAsLong())
                .description("Driver-named files in containers that are none of the host's driver files")
                .register(registry);
    }

    /** One series at a time: a change of state or version replaces it, as build_info's driver_version does. */
    synchronized void hostDriverState(HostDriverState state) {
        if (hostDriverState != null) {
            registry.remove(hostDriverState);
        }
        hostDriverState = Gauge.builder(HOST_DRIVER_STATE, () -> 1)
                .description("The node's driver: the kernel module's version against the host's user-space driver files")
                .tag("state", state.state().label())
                .tag("module_version", state.moduleVersion().map(UnrepairedContainers::labelValue).orElse(""))
                .tag("library_version", state.libraryVersion().map(UnrepairedContainers::labelValue).orElse(""))
                .register(registry);
    }

    void ownPodVisible(boolean visible) {
        if (ownPodGauge.compareAndSet(false, true)) {
            Gauge.builder(OWN_POD_VISIBLE, ownPod, AtomicInteger::get)
                    .description("1 once a watched runtime runs the agent's own pod, 0 while none does")
                    .strongReference(true)
                    .register(registry);
        }
        ownPod.set(visible ? 1 : 0);
    }

    void reconcileSucceeded(Instant at) {
        // Registered on the first success, not before: a series that reads 0 would look
        // like a reconcile in 1970 and page someone while the agent is still starting.
        if (lastReconcile.getAndSet(at) != null) {
            return;
        }
        Gauge.builder(RECONCILE_LAST_SUCCESS, lastReconcile, last -> last.get().toEpochMilli() / 1000.0)
                .description("Unix time of the last full reconcile that finished")
                .strongReference(true)
                .register(registry);
    }
}
