package io.driveralias.agent.metrics;

import io.driveralias.agent.config.BuildVersion;
import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.core.FailureReason;
import io.driveralias.agent.core.LateRepairCause;
import io.driveralias.agent.core.PodRef;
import io.driveralias.agent.core.Printable;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
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

    static final int LIBRARY_LIMIT = 64;
    static final int ACTION_LIMIT = 32;
    static final int RESULT_LIMIT = 8;

    /** Kubernetes names are at most 253 characters; a Docker label can be anything. */
    private static final int MAX_CONTAINER_LABEL = 253;

    private static final Duration[] LATENCY_BUCKETS = {
        Duration.ofMillis(1), Duration.ofMillis(5), Duration.ofMillis(10), Duration.ofMillis(25),
        Duration.ofMillis(50), Duration.ofMillis(100), Duration.ofMillis(250), Duration.ofMillis(500),
        Duration.ofSeconds(1), Duration.ofSeconds(5),
    };

    private static final String CONTAINERS = "driver.alias.containers";
    private static final String LINKS_CREATED = "driver.alias.links.created";
    private static final String LINKS_REPLACED = "driver.alias.links.replaced";
    private static final String REPAIR_FAILURES = "driver.alias.repair.failures";
    private static final String UNREPAIRED_CONTAINERS = "driver.alias.unrepaired.containers";
    private static final String CONTAINER_UNREPAIRED = "driver.alias.container.unrepaired";
    private static final String RESYNC_INTERVAL = "driver.alias.resync.interval.seconds";
    private static final String DOCKER_EVENTS = "driver.alias.docker.events";
    private static final String RUNTIME_EVENTS = "driver.alias.runtime.events";
    private static final String RUNTIME_UP = "driver.alias.runtime.up";
    /**
     * The {@code runtime} label's whole set: the runtimes the agent has adapters for, and {@code nri},
     * the agent's connection to containerd as its NRI plugin. Anything else counts as "other".
     */
    private static final Set<String> RUNTIMES = Set.of("docker", "containerd", "nri");
    /** What a node may watch: the one-argument constructors' set, as on a node with both runtimes. */
    public static final Set<String> ADAPTED_RUNTIMES = Set.of("docker", "containerd");
    private static final String HOST_DRIVER_FILES = "driver.alias.host.driver.files";
    private static final String UNMATCHED_DRIVER_FILES = "driver.alias.unmatched.driver.files";
    private static final String KUBERNETES_EVENTS = "driver.alias.kubernetes.events";
    private static final String QUEUE_REFUSED = "driver.alias.queue.refused";
    private static final String REPAIRED_AFTER_START = "driver.alias.repaired.after.start";
    private static final String OWN_POD_VISIBLE = "driver.alias.own.pod.visible";
    private static final String RECONCILE_LAST_SUCCESS = "driver.alias.reconcile.last.success.timestamp.seconds";
    /** Micrometer's Prometheus registry turns a gauge whose name ends in ".info" into an info metric. */
    private static final String BUILD_INFO = "driver.alias.build.info";

    private final PrometheusMeterRegistry registry;
    private final String version;
    /** The runtimes this node watches: Docker's own series exist only where Docker is one of them. */
    private final Set<String> watched;
    private final Runnable onClose;

    private final BoundedLabel libraries = new BoundedLabel(LIBRARY_LIMIT);
    private final BoundedLabel actions = new BoundedLabel(ACTION_LIMIT);
    private final BoundedLabel results = new BoundedLabel(RESULT_LIMIT);

    private final Timer repairDuration;
    private final Timer exposure;
    /** Outside a pod the agent never asks, and the series does not exist. */
    private final AtomicInteger ownPod = new AtomicInteger();
    private final java.util.concurrent.atomic.AtomicBoolean ownPodGauge = new java.util.concurrent.atomic.AtomicBoolean();
    /** One gauge per watched runtime, registered when the agent first says whether it is up. */
    private final Map<String, AtomicInteger> runtimeUp = new ConcurrentHashMap<>();
    /** Milliseconds of --resync-interval; the gauge is registered when it is first set. */
    private final AtomicLong resyncMillis = new AtomicLong(-1);
    private final AtomicReference<Instant> lastReconcile = new AtomicReference<>();
    private final Map<String, ContainerSeries> unrepaired = new ConcurrentHashMap<>();
    /** Replaced under this object's lock when the driver version changes. */
    private Meter buildInfo;

    private record ContainerSeries(Tags tags, Meter gauge) {
    }

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
            // docker_error only where Docker is watched: a containerd node has no Docker to fail.
            if (reason != FailureReason.DOCKER_ERROR || this.watched.contains("docker")) {
                failures(reason);
            }
        }
        for (LateRepairCause cause : LateRepairCause.values()) {
            repairedAfterStart(cause, 0);
        }
        for (String result : java.util.List.of("sent", "dropped", "failed")) {
            kubernetesEvents(result);
        }
        queueRefused();
        Gauge.builder(UNREPAIRED_CONTAINERS, unrepaired, Map::size)
                .description("Running in-scope containers still missing a driver alias")
                .strongReference(true)
                .register(registry);
        // Each watched runtime at 0 until it connects: an agent that never reaches its runtime is
        // seen by the disconnect alert too. Docker's own gauge, kept for dashboards written before
        // other runtimes, only where Docker is watched: no Docker series on a containerd node.
        for (String runtime : this.watched) {
            runtimeUp(runtimeName(runtime));
        }
        repairDuration = latency("driver.alias.repair.duration",
                "From the runtime's event (or reconcile) to the aliases verified");
        exposure = latency("driver.alias.exposure",
                "From the container's start to its aliases verified, 0 when done before the start");
        buildInfo = registerBuildInfo("unknown");
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
        String contentType = acceptHeader != null && acceptHeader.contains("application/openmetrics-text")
                ? PrometheusScrape.OPENMETRICS
                : PrometheusScrape.TEXT;
        ByteArrayOutputStream body = new ByteArrayOutputStream(32 * 1024);
        try {
            // The registry picks its writer from this string just as from an Accept header.
            registry.scrape(body, contentType);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return new PrometheusScrape(contentType, body.toByteArray());
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
        Tags tags = containerTags(container).and("reason", RepairMetrics.mainReason(reasons).label());
        unrepaired.compute(container.id(), (id, old) -> {
            if (old != null && old.tags().equals(tags)) {
                return old;
            }
            if (old != null) {
                registry.remove(old.gauge());
            }
            Meter gauge = Gauge.builder(CONTAINER_UNREPAIRED, () -> 1)
                    .description("1 for each running in-scope container still missing a driver alias")
                    .tags(tags)
                    .register(registry);
            return new ContainerSeries(tags, gauge);
        });
    }

    @Override
    public void resolved(String containerId) {
        unrepaired.computeIfPresent(containerId, (id, series) -> {
            registry.remove(series.gauge());
            return null;
        });
    }

    @Override
    public void resyncInterval(Duration interval) {
        // Registered once told, not before: the alert that uses it must not see a 0.
        if (resyncMillis.getAndSet(interval.toMillis()) >= 0) {
            return;
        }
        Gauge.builder(RESYNC_INTERVAL, resyncMillis, millis -> millis.get() / 1000.0)
                .description("The configured period of the full reconcile (--resync-interval)")
                .strongReference(true)
                .register(registry);
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
        runtimeUp(runtimeName(runtime)).set(up ? 1 : 0);
    }

    /** The runtime's gauge, registered at 0 the first time; Docker's also feeds driver_alias_docker_up. */
    private AtomicInteger runtimeUp(String name) {
        return runtimeUp.computeIfAbsent(name, r -> {
            AtomicInteger value = new AtomicInteger();
            Gauge.builder(RUNTIME_UP, value, AtomicInteger::get)
                    .description("1 while the runtime's event stream is connected and it answers")
                    .tag("runtime", r)
                    .strongReference(true)
                    .register(registry);
            if (r.equals("docker")) {
                // Kept for the dashboards written before the agent watched other runtimes.
                Gauge.builder("driver.alias.docker.up", value, AtomicInteger::get)
                        .description("1 while the Docker event stream is connected (driver_alias_runtime_up{runtime=\"docker\"})")
                        .strongReference(true)
                        .register(registry);
            }
            return value;
        });
    }

    @Override
    public void hostDriverFiles(IntSupplier found, LongSupplier unmatched) {
        Gauge.builder(HOST_DRIVER_FILES, found, f -> f.getAsInt())
                .description("The driver's files the agent found on the host; 0: it can repair no container")
                .strongReference(true)
                .register(registry);
        FunctionCounter.builder(UNMATCHED_DRIVER_FILES, unmatched, u -> u.getAsLong())
                .description("Driver-named files in containers that are none of the host's driver files")
                .register(registry);
    }

    @Override
    public void runtimeEvent(String runtime, String action) {
        String name = runtimeName(runtime);
        String admitted = actions.admit(actionName(action));
        Counter.builder(RUNTIME_EVENTS)
                .description("Container runtime events received, by runtime and action")
                .tag("runtime", name)
                .tag("action", admitted)
                .register(registry)
                .increment();
        if (name.equals("docker")) {
            Counter.builder(DOCKER_EVENTS)
                    .description("Docker events received, by action")
                    .tag("action", admitted)
                    .register(registry)
                    .increment();
        }
    }

    private static String runtimeName(String runtime) {
        return RUNTIMES.contains(runtime) ? runtime : BoundedLabel.OTHER;
    }

    @Override
    public void ownPodVisible(boolean visible) {
        if (ownPodGauge.compareAndSet(false, true)) {
            Gauge.builder(OWN_POD_VISIBLE, ownPod, AtomicInteger::get)
                    .description("1 once a watched runtime runs the agent's own pod, 0 while none does")
                    .strongReference(true)
                    .register(registry);
        }
        ownPod.set(visible ? 1 : 0);
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

    @Override
    public synchronized void driverVersion(String driverVersion) {
        String value = driverVersion == null || driverVersion.isBlank() ? "unknown" : labelValue(driverVersion);
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

    private static Tags containerTags(ContainerRef container) {
        PodRef pod = container.pod().orElse(null);
        String name = pod != null ? pod.container() : stripSlash(container.name());
        return Tags.of(
                "namespace", pod != null ? labelValue(pod.namespace()) : "",
                "pod", pod != null ? labelValue(pod.name()) : "",
                "container", labelValue(name),
                "container_id", labelValue(container.id()));
    }

    /** Docker names containers "/name" in its API; people know them as "name". */
    private static String stripSlash(String name) {
        return name != null && name.startsWith("/") ? name.substring(1) : name;
    }

    /** "exec_start: /bin/sh -c ..." carries a command line; only the action is a label. */
    private static String actionName(String action) {
        int colon = action == null ? -1 : action.indexOf(':');
        return colon < 0 ? action : action.substring(0, colon);
    }

    /**
     * A label value from container data (a Docker label can hold anything): control characters,
     * line breaks and bidi overrides escaped as in the log lines ({@link Printable}), so a
     * dashboard, a terminal running curl or an alert message shows what was there, and capped.
     */
    private static String labelValue(String value) {
        return Printable.of(value, MAX_CONTAINER_LABEL);
    }
}
