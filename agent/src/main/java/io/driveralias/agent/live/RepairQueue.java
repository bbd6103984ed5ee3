package io.driveralias.agent.live;

import java.time.Instant;
import java.util.HashSet;
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
            // One job: the first arrival, and "start" if either was (it decides the priority).
            String trigger = job.trigger().equals("start") ? "start" : waiting.trigger();
            Instant first = job.receivedAt().isBefore(waiting.receivedAt()) ? job.receivedAt() : waiting.receivedAt();
            pending.put(job.containerId(), new Job(job.containerId(), first, trigger));
            notifyAll();
            return false;
        }
        if (pending.size() >= capacity) {
            return false;
        }
        pending.put(job.containerId(), job);
        notifyAll();
        return true;
    }

    /**
     * The oldest job for a container that has started (a start event), else the oldest job
     * at all, skipping containers a worker holds; null once closed. A running container
     * without its aliases is exposed; a created one, or a reconcile check, can wait.
     */
    synchronized Job take() throws InterruptedException {
        while (true) {
            if (closed) {
                return null;
            }
            Job chosen = null;
            for (Job job : pending.values()) {
                if (inFlight.contains(job.containerId())) {
                    continue;
                }
                if (job.trigger().equals("start")) {
                    chosen = job;
                    break;
                }
                if (chosen == null) {
                    chosen = job;
                }
            }
            if (chosen != null) {
                pending.remove(chosen.containerId());
                inFlight.add(chosen.containerId());
                return chosen;
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
