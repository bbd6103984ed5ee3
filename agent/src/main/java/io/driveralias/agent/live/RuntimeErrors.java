package io.driveralias.agent.live;

import io.driveralias.agent.core.FailureReason;
import io.driveralias.agent.core.LruMap;
import io.driveralias.agent.core.Printable;
import io.driveralias.agent.metrics.RepairMetrics;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Containers whose examination the runtime did not answer: a call that failed or ran past its
 * deadline while the runtime's event stream stayed up (a busy or half-broken daemon). Each is
 * tried again soon, a few times, rather than at the next resync (a minute later by default): a GPU
 * container that starts meanwhile would run without its aliases that long, and one that exits
 * meanwhile would never be seen.
 * After the last try the caller says so (a log line and a count) and leaves the container to the
 * next reconcile. Bounded: beyond {@value #CAPACITY} containers failing at once, the oldest are
 * forgotten and start their tries again.
 */
final class RuntimeErrors {

    /** The waits before each new try: about 5 s in all, the scale of one call's own deadline. */
    static final List<Duration> RETRIES = List.of(Duration.ofMillis(250), Duration.ofSeconds(1), Duration.ofSeconds(4));
    static final int CAPACITY = 1024;

    private static final Logger LOG = LoggerFactory.getLogger(RuntimeErrors.class);

    private final Map<RepairQueue.Key, Integer> failures = Collections.synchronizedMap(new LruMap<>(CAPACITY));
    private final RepairQueue queue;
    private final RepairMetrics metrics;

    RuntimeErrors(RepairQueue queue, RepairMetrics metrics) {
        this.queue = queue;
        this.metrics = metrics;
    }

    /**
     * The runtime did not answer for {@code job}'s container: the job again after a wait, or, with
     * the tries spent, a WARN line and a {@code docker_error} or {@code runtime_error} failure. Where
     * the runtime is known to be down ({@code runtimeUp} false) only a debug line: its return
     * reconciles, and its outage has its own log line, metric and alert.
     */
    void unanswered(RepairQueue.Job job, boolean runtimeUp, String error) {
        RepairQueue.Key key = job.key();
        Optional<Duration> again = failed(key);
        if (again.isPresent()) {
            LOG.debug("container {}: {} did not answer ({}); trying again in {} ms", key.containerId(), key.runtime(),
                    Printable.of(error), again.get().toMillis());
            if (queue.offerAfter(job, again.get()) == RepairQueue.Offer.FULL) {
                metrics.queueRefused(1);
            }
        } else if (runtimeUp) {
            LOG.warn("container {}: {} did not answer {} tries to examine it (the last: {}); left for the next reconcile",
                    Printable.of(key.containerId()), ContainerRuntime.displayName(key.runtime()), RETRIES.size() + 1,
                    Printable.of(error));
            metrics.repairFailed(reason(key.runtime()));
        } else {
            LOG.debug("container {}: {} is down; left for the reconcile when it is back", key.containerId(), key.runtime());
        }
    }

    /** Docker's own reason where Docker failed; every other runtime's is {@code runtime_error}. */
    static FailureReason reason(String runtime) {
        return runtime.equals("docker") ? FailureReason.DOCKER_ERROR : FailureReason.RUNTIME_ERROR;
    }

    /** One more unanswered examination: the wait before the next try, or empty when the tries are spent (and forgotten). */
    Optional<Duration> failed(RepairQueue.Key key) {
        int before = failures.getOrDefault(key, 0);
        if (before >= RETRIES.size()) {
            failures.remove(key);
            return Optional.empty();
        }
        failures.put(key, before + 1);
        return Optional.of(RETRIES.get(before));
    }

    /** The runtime answered for this container: its next failure starts the tries anew. */
    void answered(RepairQueue.Key key) {
        failures.remove(key);
    }
}
