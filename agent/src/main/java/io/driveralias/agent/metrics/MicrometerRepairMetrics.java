package io.driveralias.agent.metrics;

import io.driveralias.agent.config.BuildVersion;
import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.core.DriverLoad;
import io.driveralias.agent.core.FailureReason;
import io.driveralias.agent.core.LateRepairCause;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.Set;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;

/**
 * {@link RepairMetrics} as Prometheus metrics, through Micrometer. The names as scraped are
 * the contract in docs/monitoring.md; Micrometer adds {@code _total} to counters and {@code _seconds}
 * to timers, so the meters here are named without them; {@link CreatedSuffixNaming} keeps
 * the {@code _created} of {@code driver_alias_links_created_total}.
 *
 * <p>Labels that come from containers are bounded: {@code library} keeps the first
 * {@value #LIBRARY_LIMIT} alias names and folds the rest (and anything not a plain printable
 * name) into {@code "other"}; the per-container gauge lives only while its container is
 * unrepaired, its values escaped and capped.
 */
public final class MicrometerRepairMetrics implements RepairMetrics, AutoCloseable {

    /** What a node may watch: the one-argument constructors' set, as on a node with both runtimes. */
    public static final Set<String> ADAPTED_RUNTIMES = Set.of("docker", "containerd");
    static final int LIBRARY_LIMIT = 64;
    static final int ACTION_LIMIT = 32;
    static final int RESULT_LIMIT = 8;

    private static final Duration[] LATENCY_BUCKETS = {
        Duration.ofMillis(1), Duration.ofMillis(5), Duration.ofMillis(10), Duration.ofMillis(25),
        Duration.ofMillis(50), Duration.ofMillis(100), Duration.ofMillis(250), Duration.ofMillis(500),
        Duration.ofSeconds(1), Duration.ofSeconds(5),
    };

    private static final String CONTAINERS = "driver.alias.containers";
    private static final String LINKS_CREATED = "driver.alias.links.created";
    private static final String LINKS_REPLACED = "driver.alias.links.replaced";
    private static final String REPAIR_FAILURES = "driver.alias.repair.failures";
    private static final String KUBERNETES_EVENTS = "driver.alias.kubernetes.events";
    private static final String QUEUE_REFUSED = "driver.alias.queue.refused";
    private static final String REPAIRED_AFTER_START = "driver.alias.repaired.after.start";
    private static final String CONTAINER_DRIVER = "driver.alias.container.driver";
    /** Micrometer's Prometheus registry turns a gauge whose name ends in ".info" into an info metric. */
    private static final String BUILD_INFO = "driver.alias.build.info";

    private final PrometheusMeterRegistry registry;
    private final String version;
    /** The runtimes this node watches: Docker's own series exist only where Docker is one of them. */
    private final Set<String> watched;
    private final Runnable onClose;

    private final BoundedLabel libraries = new BoundedLabel(LIBRARY_LIMIT);
    private final BoundedLabel results = new BoundedLabel(RESULT_LIMIT);

    private final Timer repairDuration;
    private final Timer exposure;
    private final UnrepairedContainers unrepaired;
    private final RuntimeMeters runtimes;
    private final AgentStateGauges state;
    /** Replaced under this object's lock when the driver version changes. */
    private Meter buildInfo;

    /** The agent's meters only, on a registry the caller owns, as on a node that watches Docker and containerd. */
    public MicrometerRepairMetrics(PrometheusMeterRegistry registry, String version) {
        this(registry, version, ADAPTED_RUNTIMES);
    }

    /** The agent's meters only, for a node that watches {@code watched} (docker, containerd). */
    public MicrometerRepairMetrics(PrometheusMeterRegistry registry, String version, Set<String> watched) {
        this(registry, version, watched, () -> {
        });
    }

    private MicrometerRepairMetrics(PrometheusMeterRegistry registry, String version, Set<String> watched,
                                    Runnable onClose) {
        this.registry = registry;
        this.version = version;
        this.watched = Set.copyOf(watched);
        this.onClose = onClose;
        registry.config().namingConvention(new CreatedSuffixNaming(registry.config().namingConvention()));
        // Every outcome and reason from the start, at 0: rate() and increase() then see the
        // first one too, and dashboards show the whole set.
        for (ContainerOutcome outcome : ContainerOutcome.values()) {
            containers(outcome);
        }
        for (FailureReason reason : FailureReason.values()) {
            if (exported(reason)) {
                failures(reason);
            }
        }
        for (LateRepairCause cause : LateRepairCause.values()) {
            repairedAfterStart(cause, 0);
        }
        for (DriverLoad.Verdict loads : DriverLoad.Verdict.values()) {
            containerDriver(loads, 0);
        }
        for (String result : java.util.List.of("sent", "dropped", "failed")) {
            kubernetesEvents(result);
        }
        queueRefused();
        unrepaired = new UnrepairedContainers(registry);
        runtimes = new RuntimeMeters(registry, this.watched);
        state = new AgentStateGauges(registry);
        repairDuration = latency("driver.alias.repair.duration",
                "From the runtime's event (or reconcile) to the aliases verified");
        exposure = latency("driver.alias.exposure",
                "From the container's start to its aliases verified, 0 when done before the start");
        buildInfo = registerBuildInfo("unknown");
    }

    /**
     * docker_error only where Docker is watched (a containerd node has no Docker to fail),
     * runtime_error only where another runtime is.
     */
    private boolean exported(FailureReason reason) {
        return switch (reason) {
            case DOCKER_ERROR -> watched.contains("docker");
            case RUNTIME_ERROR -> watched.stream().anyMatch(r -> !r.equals("docker"));
            default -> true;
        };
    }

    /**
     * The agent's meters plus the JVM and process ones, on a new registry, with the build's
     * version ({@link BuildVersion}).
     */
    public static MicrometerRepairMetrics withProcessMetrics(Set<String> watchedRuntimes) {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        ProcessMetrics process = ProcessMetrics.bindTo(registry);
        return new MicrometerRepairMetrics(registry, BuildVersion.get(), watchedRuntimes, process::close);
    }

    /** The whole registry in OpenMetrics if {@code acceptHeader} asks for it, else in the Prometheus text format. */
    public PrometheusScrape scrape(String acceptHeader) {
        return PrometheusScrape.of(registry, acceptHeader);
    }

    @Override
    public void containerExamined(ContainerOutcome outcome) {
        containers(outcome).increment();
    }

    @Override
    public void linkCreated(String library) {
        Counter.builder(LINKS_CREATED)
                .description("Driver aliases created, by alias name")
                .tag("library", libraries.admit(library))
                .register(registry)
                .increment();
    }

    @Override
    public void linkReplaced(String library) {
        Counter.builder(LINKS_REPLACED)
                .description("Stale or dangling driver aliases replaced, by alias name")
                .tag("library", libraries.admit(library))
                .register(registry)
                .increment();
    }

    @Override
    public void repairFailed(FailureReason reason) {
        failures(reason).increment();
    }

    @Override
    public void unrepaired(ContainerRef container, Collection<FailureReason> reasons) {
        unrepaired.unrepaired(container, reasons);
    }

    @Override
    public void resolved(String containerId) {
        unrepaired.resolved(containerId);
    }

    @Override
    public void containerDriver(DriverLoad.Verdict loads) {
        containerDriver(loads, 1);
    }

    private void containerDriver(DriverLoad.Verdict loads, int containers) {
        Counter.builder(CONTAINER_DRIVER)
                .description("GPU containers examined, by what their loader takes of the driver")
                .tag("loads", loads.label())
                .register(registry)
                .increment(containers);
    }

    @Override
    public void driverMismatch(ContainerRef container, DriverLoad load) {
        unrepaired.driverMismatch(container, load);
    }

    @Override
    public void driverMatched(String containerId) {
        unrepaired.driverMatched(containerId);
    }

    @Override
    public void resyncInterval(Duration interval) {
        state.resyncInterval(interval);
    }

    @Override
    public void repairDuration(Duration duration) {
        repairDuration.record(duration);
    }

    @Override
    public void exposure(Duration duration) {
        exposure.record(duration);
    }

    @Override
    public void runtimeConnected(String runtime, boolean up) {
        runtimes.connected(runtime, up);
    }

    @Override
    public void hostDriverFiles(IntSupplier found, LongSupplier unmatched) {
        state.hostDriverFiles(found, unmatched);
    }

    @Override
    public void hostDriverState(io.driveralias.agent.core.HostDriverState hostDriver) {
        state.hostDriverState(hostDriver);
    }

    @Override
    public void runtimeEvent(String runtime, String action) {
        runtimes.event(runtime, action);
    }

    @Override
    public void ownPodVisible(boolean visible) {
        state.ownPodVisible(visible);
    }

    @Override
    public void repairedAfterStart(LateRepairCause cause) {
        repairedAfterStart(cause, 1);
    }

    private void repairedAfterStart(LateRepairCause cause, int containers) {
        Counter.builder(REPAIRED_AFTER_START)
                .description("GPU containers repaired after their first instruction, by why not before it")
                .tag("cause", cause.label())
                .register(registry)
                .increment(containers);
    }

    @Override
    public void queueRefused(int containers) {
        queueRefused().increment(containers);
    }

    /** Registered at 0 from the start, like the other counters: scraped before the first refusal. */
    private Counter queueRefused() {
        return Counter.builder(QUEUE_REFUSED)
                .description("Containers the full work queue refused; the next reconcile takes them")
                .register(registry);
    }

    @Override
    public void reconcileSucceeded(Instant at) {
        state.reconcileSucceeded(at);
    }

    @Override
    public synchronized void driverVersion(String driverVersion) {
        String value = driverVersion == null || driverVersion.isBlank() ? "unknown" : UnrepairedContainers.labelValue(driverVersion);
        if (value.equals(buildInfo.getId().getTag("driver_version"))) {
            return;
        }
        registry.remove(buildInfo);
        buildInfo = registerBuildInfo(value);
    }

    @Override
    public void kubernetesEvent(String result) {
        kubernetesEvents(result).increment();
    }

    private Counter kubernetesEvents(String result) {
        return Counter.builder(KUBERNETES_EVENTS)
                .description("Kubernetes Events about pods, by result")
                .tag("result", results.admit(result))
                .register(registry);
    }

    @Override
    public void close() {
        onClose.run();
        registry.close();
    }

    private Counter containers(ContainerOutcome outcome) {
        return Counter.builder(CONTAINERS)
                .description("Containers examined, by outcome")
                .tag("outcome", outcome.label())
                .register(registry);
    }

    private Counter failures(FailureReason reason) {
        return Counter.builder(REPAIR_FAILURES)
                .description("Repairs that failed, by reason")
                .tag("reason", reason.label())
                .register(registry);
    }

    private Timer latency(String name, String description) {
        return Timer.builder(name)
                .description(description)
                .serviceLevelObjectives(LATENCY_BUCKETS)
                .register(registry);
    }

    private Meter registerBuildInfo(String driverVersion) {
        return Gauge.builder(BUILD_INFO, () -> 1)
                .description("The agent's version and the driver version it repairs for")
                .tag("version", version)
                .tag("driver_version", driverVersion)
                .register(registry);
    }
}
