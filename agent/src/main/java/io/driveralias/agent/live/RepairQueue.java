package io.driveralias.agent.live;

import java.time.Instant;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * Work waiting for the repair workers: at most one entry per container, so a burst of
 * events for one container (create, start, a reconcile on top) is one repair, and never
 * two workers on the same container at once. Bounded: when full, new work is refused and
 * the next reconcile finds it again.
 */
final class RepairQueue {

    /** One container to examine; {@code receivedAt} is when the first request for it arrived. */
    record Job(String containerId, Instant receivedAt, String trigger) {
    }

    private final int capacity;
    private final Map<String, Job> pending = new LinkedHashMap<>();
    private final Set<String> inFlight = new HashSet<>();
    private boolean closed;

    RepairQueue(int capacity) {
        this.capacity = capacity;
    }

    /** Returns false if the container was already waiting (merged), or the queue is full or closed. */
    synchronized boolean offer(Job job) {
        if (closed) {
            return false;
        }
        Job waiting = pending.get(job.containerId());
        if (waiting != null) {
            if (job.receivedAt().isBefore(waiting.receivedAt())) {
                pending.put(job.containerId(), new Job(job.containerId(), job.receivedAt(), waiting.trigger()));
            }
            return false;
        }
        if (pending.size() >= capacity) {
            return false;
        }
        pending.put(job.containerId(), job);
        notifyAll();
        return true;
    }

    /** The oldest job whose container no worker holds; null once closed. */
    synchronized Job take() throws InterruptedException {
        while (true) {
            if (closed) {
                return null;
            }
            for (Iterator<Job> it = pending.values().iterator(); it.hasNext(); ) {
                Job job = it.next();
                if (inFlight.add(job.containerId())) {
                    it.remove();
                    return job;
                }
            }
            wait();
        }
    }

    /** The worker is done with this container: later work for it may start. */
    synchronized void done(String containerId) {
        inFlight.remove(containerId);
        notifyAll();
    }

    synchronized int size() {
        return pending.size();
    }

    /** Workers stop taking work; what is still pending is left to the next agent's reconcile. */
    synchronized void close() {
        closed = true;
        notifyAll();
    }
}
