package io.driveralias.agent.kube;

import io.driveralias.agent.core.LruMap;
import java.time.Duration;
import java.time.Instant;

/**
 * Per-pod token buckets, like client-go's EventSourceObjectSpamFilter: a pod may receive
 * {@code burst} Events at once, then one per {@code refillInterval}. A pod whose container
 * crash-loops through repairs cannot flood the API server or its own event list. Remembers
 * at most {@code maxPods} pods (least recently heard of forgotten first: such a pod starts
 * again with a full bucket). Time comes from the events, so the filter is deterministic.
 * Not thread-safe: one sender thread owns it.
 */
final class SpamFilter {

    private final int burst;
    private final long refillNanos;
    private final LruMap<String, Bucket> buckets;

    SpamFilter(int burst, Duration refillInterval, int maxPods) {
        if (burst < 1 || refillInterval.isNegative() || refillInterval.isZero()) {
            throw new IllegalArgumentException("burst must be positive and the refill interval too");
        }
        this.burst = burst;
        this.refillNanos = refillInterval.toNanos();
        this.buckets = new LruMap<>(maxPods);
    }

    /** Takes a token from the pod's bucket if there is one; {@code podKey} is the pod's uid (or name). */
    boolean allow(String podKey, Instant at) {
        Bucket bucket = buckets.computeIfAbsent(podKey, k -> new Bucket(burst, at));
        bucket.refill(at);
        if (bucket.tokens >= 1) {
            bucket.tokens -= 1;
            return true;
        }
        return false;
    }

    private final class Bucket {
        double tokens;
        Instant refilledAt;

        Bucket(double tokens, Instant at) {
            this.tokens = tokens;
            this.refilledAt = at;
        }

        /** A clock that went backwards adds nothing, and does not move the reference either. */
        void refill(Instant at) {
            if (!at.isAfter(refilledAt)) {
                return;
            }
            long elapsed = Duration.between(refilledAt, at).toNanos();
            tokens = Math.min(burst, tokens + (double) elapsed / refillNanos);
            refilledAt = at;
        }
    }
}
