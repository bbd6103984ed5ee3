package io.driveralias.agent.live;

import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Work waiting for the repair workers: at most one entry per container, so a burst of
 * events for one container (create, start, a reconcile on top) is one repair, and never
 * two workers on the same container at once. Bounded: when full, new work is refused and
 * the next reconcile finds it again.
 *
 * <p>A started container goes first: without its aliases it is exposed. A created one waits
 * {@code createDelay} before it may be taken: with {@code docker run} its start follows within
 * milliseconds and the two become one job (one inspect, not two); the kubelet leaves far longer
 * between the two, so repair before start loses nothing by it.
 */
final class RepairQueue {

    /** A container of one runtime: ids are the runtime's own, so the runtime is part of the key. */
    record Key(String runtime, String containerId) {
        @Override
        public String toString() {
            return runtime + " " + containerId;
        }
    }

    /** One container to examine; {@code receivedAt} is when the first request for it arrived. */
    record Job(Key key, Instant receivedAt, String trigger) {
    }

    private record Entry(Job job, long eligibleNanos) {
    }

    /** What became of an offered job. */
    enum Offer { QUEUED, MERGED, FULL, CLOSED }

    private final int capacity;
    private final long createDelayNanos;
    private final Map<Key, Entry> pending = new LinkedHashMap<>();
    private final Set<Key> inFlight = new HashSet<>();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private boolean closed;

    RepairQueue(int capacity, Duration createDelay) {
        this.capacity = capacity;
        this.createDelayNanos = createDelay.toNanos();
    }

    /** Queued; merged with the job already waiting for the container; or refused (full, closed). */
    Offer offer(Job job) {
        lock.lock();
        try {
            if (closed) {
                return Offer.CLOSED;
            }
            long eligible = System.nanoTime() + (job.trigger().equals("create") ? createDelayNanos : 0);
            Entry waiting = pending.get(job.key());
            if (waiting != null) {
                // One job: the first arrival, and "start" if either was (it decides the priority).
                Job old = waiting.job();
                String trigger = job.trigger().equals("start") ? "start" : old.trigger();
                Instant first = job.receivedAt().isBefore(old.receivedAt()) ? job.receivedAt() : old.receivedAt();
                pending.put(job.key(), new Entry(new Job(job.key(), first, trigger),
                        Math.min(eligible, waiting.eligibleNanos())));
                changed.signalAll();
                return Offer.MERGED;
            }
            if (pending.size() >= capacity) {
                return Offer.FULL;
            }
            pending.put(job.key(), new Entry(job, eligible));
            changed.signalAll();
            return Offer.QUEUED;
        } finally {
            lock.unlock();
        }
    }

    /**
     * The oldest eligible job for a started container, else the oldest eligible job, skipping
     * containers a worker holds; blocks until there is one; null once closed.
     */
    Job take() throws InterruptedException {
        lock.lock();
        try {
            while (true) {
                if (closed) {
                    return null;
                }
                long now = System.nanoTime();
                Entry chosen = null;
                long nextEligible = Long.MAX_VALUE;
                for (Entry e : pending.values()) {
                    if (inFlight.contains(e.job().key())) {
                        continue;
                    }
                    if (e.eligibleNanos() > now) {
                        nextEligible = Math.min(nextEligible, e.eligibleNanos());
                        continue;
                    }
                    if (e.job().trigger().equals("start")) {
                        chosen = e;
                        break;
                    }
                    if (chosen == null) {
                        chosen = e;
                    }
                }
                if (chosen != null) {
                    pending.remove(chosen.job().key());
                    inFlight.add(chosen.job().key());
                    return chosen.job();
                }
                if (nextEligible == Long.MAX_VALUE) {
                    changed.await();
                } else {
                    changed.awaitNanos(nextEligible - now);
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /** The worker is done with this container: later work for it may start. */
    void done(Key key) {
        lock.lock();
        try {
            inFlight.remove(key);
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    int size() {
        lock.lock();
        try {
            return pending.size();
        } finally {
            lock.unlock();
        }
    }

    /** Workers stop taking work; what is still pending is left to the next agent's reconcile. */
    void close() {
        lock.lock();
        try {
            closed = true;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }
}
