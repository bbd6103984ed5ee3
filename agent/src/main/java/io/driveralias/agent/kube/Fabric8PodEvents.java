package io.driveralias.agent.kube;

import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.core.DriverLoad;
import io.driveralias.agent.core.PodRef;
import io.driveralias.agent.metrics.RepairMetrics;
import io.driveralias.agent.repair.RepairReport;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * {@link PodEvents} as core/v1 Events, which every Kubernetes since 1.0 accepts.
 *
 * <p>Callers only enqueue: {@link #repaired} and {@link #failed} put a small record into a
 * bounded queue and return; when the queue is full the event is dropped and counted. One
 * background thread owns everything else: the per-pod spam filter, the correlator that
 * turns repeats into {@code count+1} on the existing object, and the API calls, each with a
 * short timeout and a few retries on server errors and timeouts. Every event ends up counted
 * exactly once in {@code driver_alias_kubernetes_events_total{result}}: sent, dropped (queue
 * full, spam filter, shutting down) or failed (refused, or still failing after the retries).
 */
public final class Fabric8PodEvents implements PodEvents {

    public static final String COMPONENT = "driver-alias-agent";
    public static final String REASON_REPAIRED = "DriverAliasesRepaired";
    public static final String REASON_FAILED = "DriverAliasRepairFailed";
    public static final String REASON_DRIVER_MISMATCH = "DriverAliasDriverMismatch";
    public static final String REASON_FORWARD_COMPATIBILITY = "DriverAliasForwardCompatibility";

    static final String SENT = "sent";
    static final String DROPPED = "dropped";
    static final String FAILED = "failed";

    private static final Logger LOG = LoggerFactory.getLogger(Fabric8PodEvents.class);

    /**
     * Tuning, with client-go's choices where it has one. {@code retryBackoff} doubles after each
     * failed attempt; {@code closeTimeout} is how long {@link #close} lets the queue drain.
     */
    public record Settings(int queueCapacity, int maxAttempts, Duration retryBackoff, Duration aggregationWindow,
                           int burst, Duration refillInterval, int cacheSize, Duration closeTimeout) {

        public static final Settings DEFAULTS = new Settings(1000, 3, Duration.ofMillis(500), Duration.ofMinutes(10),
                5, Duration.ofMinutes(5), 512, Duration.ofSeconds(3));

        public Settings {
            if (queueCapacity < 1 || maxAttempts < 1 || burst < 1 || cacheSize < 1) {
                throw new IllegalArgumentException("queue, attempts, burst and cache must be positive");
            }
            Objects.requireNonNull(retryBackoff, "retryBackoff");
            Objects.requireNonNull(aggregationWindow, "aggregationWindow");
            Objects.requireNonNull(refillInterval, "refillInterval");
            Objects.requireNonNull(closeTimeout, "closeTimeout");
        }

        public Settings withQueueCapacity(int capacity) {
            return new Settings(capacity, maxAttempts, retryBackoff, aggregationWindow, burst, refillInterval,
                    cacheSize, closeTimeout);
        }

        public Settings withRetries(int attempts, Duration backoff) {
            return new Settings(queueCapacity, attempts, backoff, aggregationWindow, burst, refillInterval,
                    cacheSize, closeTimeout);
        }

        public Settings withRateLimit(int burstSize, Duration refill) {
            return new Settings(queueCapacity, maxAttempts, retryBackoff, aggregationWindow, burstSize, refill,
                    cacheSize, closeTimeout);
        }

        public Settings withCloseTimeout(Duration timeout) {
            return new Settings(queueCapacity, maxAttempts, retryBackoff, aggregationWindow, burst, refillInterval,
                    cacheSize, timeout);
        }
    }

    /** What a caller hands over: immutable; the message is written by the sender. */
    private record Pending(ContainerRef container, PodRef pod, PodEvent.Type type, String reason, Supplier<String> message,
                           Instant at) {
    }

    /** Put into the queue by {@link #close} after the last real event. */
    private static final Pending STOP = new Pending(null, null, null, null, null, null);

    private final KubernetesClient client;
    private final String nodeName;
    private final RepairMetrics metrics;
    private final Clock clock;
    private final Settings settings;
    private final BlockingQueue<Pending> queue;
    private final SpamFilter spamFilter;
    private final EventCorrelator correlator;
    private final EventWriter writer;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicBoolean dropping = new AtomicBoolean();
    private final Thread sender;
    /** Written by the sender thread only: whether the API server is currently failing us. */
    private boolean failing;

    private Fabric8PodEvents(KubernetesClient client, String nodeName, RepairMetrics metrics, Clock clock,
                             Settings settings) {
        this.client = Objects.requireNonNull(client, "client");
        this.nodeName = Objects.requireNonNull(nodeName, "nodeName");
        this.metrics = Objects.requireNonNull(metrics, "metrics");
        this.clock = Objects.requireNonNull(clock, "clock");
        this.settings = Objects.requireNonNull(settings, "settings");
        this.queue = new ArrayBlockingQueue<>(settings.queueCapacity());
        this.spamFilter = new SpamFilter(settings.burst(), settings.refillInterval(), settings.cacheSize());
        this.correlator = new EventCorrelator(settings.aggregationWindow(), settings.cacheSize());
        this.writer = new EventWriter(client, nodeName, correlator);
        this.sender = Thread.ofPlatform().name("kubernetes-events").daemon().unstarted(this::serve);
    }

    /**
     * Starts the sender thread. Takes ownership of {@code client}: {@link #close} closes it.
     * {@code nodeName} goes into {@code source.host} and {@code reportingInstance}.
     */
    public static Fabric8PodEvents start(KubernetesClient client, String nodeName, RepairMetrics metrics,
                                         Clock clock, Settings settings) {
        Fabric8PodEvents events = new Fabric8PodEvents(client, nodeName, metrics, clock, settings);
        events.sender.start();
        return events;
    }

    /** Nothing is sent when nothing was applied: there would be nothing to tell. */
    @Override
    public void repaired(ContainerRef container, RepairReport report) {
        if (!report.applied().isEmpty()) {
            enqueue(container, PodEvent.Type.NORMAL, REASON_REPAIRED, () -> EventMessages.repaired(report));
        }
    }

    @Override
    public void failed(ContainerRef container, RepairReport report) {
        enqueue(container, PodEvent.Type.WARNING, REASON_FAILED, () -> EventMessages.failed(report));
    }

    /** A mismatch warns; forward compatibility in use is said once, as Normal; the node's own driver is no news. */
    @Override
    public void driverLoad(ContainerRef container, DriverLoad load) {
        if (load.verdict().mismatch()) {
            enqueue(container, PodEvent.Type.WARNING, REASON_DRIVER_MISMATCH, () -> EventMessages.driverLoad(load));
        } else if (load.verdict() == DriverLoad.Verdict.COMPAT) {
            enqueue(container, PodEvent.Type.NORMAL, REASON_FORWARD_COMPATIBILITY, () -> EventMessages.driverLoad(load));
        }
    }

    private void enqueue(ContainerRef container, PodEvent.Type type, String reason, Supplier<String> message) {
        if (container.pod().isEmpty()) {
            return;
        }
        Pending pending = new Pending(container, container.pod().get(), type, reason, message, clock.instant());
        if (closed.get() || !queue.offer(pending)) {
            metrics.kubernetesEvent(DROPPED);
            if (!closed.get() && dropping.compareAndSet(false, true)) {
                LOG.warn("Kubernetes Events queue full ({} waiting): dropping Events until it drains"
                        + " (counted in driver_alias_kubernetes_events_total{result=\"dropped\"})",
                        settings.queueCapacity());
            }
        }
    }

    /**
     * Lets the sender drain the queue for up to {@code closeTimeout}, then stops it (an
     * attempt in flight is abandoned), counts what is left as dropped and closes the client.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        long deadline = System.nanoTime() + settings.closeTimeout().toNanos();
        try {
            if (queue.offer(STOP, settings.closeTimeout().toNanos(), TimeUnit.NANOSECONDS)) {
                TimeUnit.NANOSECONDS.timedJoin(sender, Math.max(1, deadline - System.nanoTime()));
            }
            if (sender.isAlive()) {
                sender.interrupt();
                sender.join(Duration.ofSeconds(1));
            }
        } catch (InterruptedException e) {
            sender.interrupt();
            Thread.currentThread().interrupt();
        }
        List<Pending> left = new ArrayList<>();
        queue.drainTo(left);
        left.stream().filter(p -> p != STOP).forEach(p -> metrics.kubernetesEvent(DROPPED));
        client.close();
    }

    private void serve() {
        while (true) {
            Pending pending;
            try {
                pending = queue.take();
            } catch (InterruptedException e) {
                return;
            }
            if (pending == STOP) {
                return;
            }
            dropping.set(false);
            MDC.put("container_id", pending.container().id());
            try {
                deliver(pending);
            } catch (RuntimeException e) {
                // A bug here must not stop the Events of every other pod.
                metrics.kubernetesEvent(FAILED);
                LOG.warn("Kubernetes Event for {} not sent", pending.container().displayName(), e);
            } finally {
                MDC.remove("container_id");
            }
            if (Thread.currentThread().isInterrupted()) {
                return;
            }
        }
    }

    private void deliver(Pending pending) {
        PodEvent event = new PodEvent(pending.pod(), pending.type(), pending.reason(), pending.message().get(), pending.at());
        String podKey = event.pod().uid().isBlank()
                ? event.pod().namespace() + "/" + event.pod().name()
                : event.pod().uid();
        if (!spamFilter.allow(podKey, event.at())) {
            metrics.kubernetesEvent(DROPPED);
            LOG.debug("Kubernetes Event {} for {} dropped by the per-pod rate limit", event.reason(),
                    pending.container().displayName());
            return;
        }
        EventCorrelator.Write write = correlator.next(event);
        for (int attempt = 1; ; attempt++) {
            try {
                write = writer.send(event, write);
                correlator.recorded(write);
                metrics.kubernetesEvent(SENT);
                if (failing) {
                    failing = false;
                    LOG.info("Kubernetes Events are being sent again");
                }
                return;
            } catch (KubernetesClientException e) {
                if (Thread.currentThread().isInterrupted()) {
                    metrics.kubernetesEvent(DROPPED);
                    LOG.debug("Kubernetes Event {} for {} abandoned: shutting down", event.reason(),
                            pending.container().displayName());
                    return;
                }
                if (!EventWriter.retryable(e) || attempt >= settings.maxAttempts()) {
                    metrics.kubernetesEvent(FAILED);
                    reportFailure(pending, event, e, attempt);
                    return;
                }
            }
            if (!sleep(settings.retryBackoff().multipliedBy(1L << Math.min(attempt - 1, 16)))) {
                metrics.kubernetesEvent(DROPPED);
                return;
            }
        }
    }

    private void reportFailure(Pending pending, PodEvent event, KubernetesClientException e, int attempts) {
        String why = EventWriter.describe(e);
        if (!failing) {
            failing = true;
            LOG.warn("Kubernetes Event {} for {} not sent after {} attempt(s): {} (further failures are logged"
                    + " at debug until one succeeds)", event.reason(), pending.container().displayName(), attempts, why);
        } else {
            LOG.debug("Kubernetes Event {} for {} not sent after {} attempt(s): {}", event.reason(),
                    pending.container().displayName(), attempts, why);
        }
    }

    private static boolean sleep(Duration duration) {
        try {
            Thread.sleep(duration);
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
