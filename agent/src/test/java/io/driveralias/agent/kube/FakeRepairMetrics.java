package io.driveralias.agent.kube;

import io.driveralias.agent.metrics.RepairMetrics;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/** Records {@code kubernetesEvent} results; tests wait for totals instead of sleeping. */
final class FakeRepairMetrics implements RepairMetrics {

    private final Map<String, Integer> events = new HashMap<>();

    synchronized int events(String result) {
        return events.getOrDefault(result, 0);
    }

    synchronized int eventsTotal() {
        return events.values().stream().mapToInt(Integer::intValue).sum();
    }

    /** Waits until {@code total} events have been counted, whatever their result. */
    synchronized void awaitEventsTotal(int total, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (eventsTotal() < total) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new AssertionError("expected " + total + " Kubernetes events counted within " + timeout
                        + ", got " + events);
            }
            wait(Math.max(1, left / 1_000_000));
        }
    }

    @Override
    public synchronized void kubernetesEvent(String result) {
        events.merge(result, 1, Integer::sum);
        notifyAll();
    }

    @Override
    public synchronized String toString() {
        return events.toString();
    }
}
