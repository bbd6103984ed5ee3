package io.driveralias.agent.kube;

import io.driveralias.agent.core.LruMap;
import java.time.Duration;
import java.time.Instant;

/**
 * Aggregates repeats the way client-go's EventCorrelator does: an event equal to one
 * recorded shortly before (same pod, container, type, reason and message; the source is
 * always this agent) becomes {@code count+1} and a new {@code lastTimestamp} on the existing
 * Event object instead of a new object. "Shortly" is {@code window} since the last repeat:
 * long enough to fold a crash-looping container into one object, short enough that the
 * object is still there (the API server deletes Events after an hour by default).
 * Remembers at most {@code capacity} distinct events. Not thread-safe: one sender thread
 * owns it.
 */
final class EventCorrelator {

    /** Event object names are {@code <pod>.<hex nanos>} like client-go's; at most 253 characters. */
    private static final int MAX_NAME = 253;

    /** What makes two events the same. */
    record Key(String namespace, String pod, String uid, String fieldPath, PodEvent.Type type, String reason,
               String message) {

        static Key of(PodEvent e) {
            return new Key(e.pod().namespace(), e.pod().name(), e.pod().uid(), e.fieldPath(), e.type(), e.reason(),
                    e.message());
        }
    }

    /**
     * What to write: a new object ({@code patch == false}, count 1) or a patch of an existing
     * one to {@code count}. Written Events are reported back with {@link #recorded}.
     */
    record Write(Key key, String name, int count, Instant first, Instant last, boolean patch) {
    }

    private record Recorded(String name, int count, Instant first, Instant last) {
    }

    private final Duration window;
    private final LruMap<Key, Recorded> recent;
    private long lastNameNanos = Long.MIN_VALUE;

    EventCorrelator(Duration window, int capacity) {
        this.window = window;
        this.recent = new LruMap<>(capacity);
    }

    Write next(PodEvent event) {
        Key key = Key.of(event);
        Recorded seen = recent.get(key);
        if (seen != null && !event.at().isAfter(seen.last().plus(window)) && seen.count() < Integer.MAX_VALUE) {
            Instant last = event.at().isAfter(seen.last()) ? event.at() : seen.last();
            return new Write(key, seen.name(), seen.count() + 1, seen.first(), last, true);
        }
        return fresh(event);
    }

    /** A new object for this event, e.g. because the one to patch has expired on the server. */
    Write fresh(PodEvent event) {
        return new Write(Key.of(event), newName(event), 1, event.at(), event.at(), false);
    }

    void recorded(Write write) {
        recent.put(write.key(), new Recorded(write.name(), write.count(), write.first(), write.last()));
    }

    /**
     * {@code <pod>.<hex nanos>}. Nanoseconds are made strictly increasing, so two events at
     * the same instant (a coarse clock) never share a name.
     */
    private String newName(PodEvent event) {
        Instant at = event.at();
        long nanos = at.getEpochSecond() * 1_000_000_000L + at.getNano();
        nanos = Math.max(nanos, lastNameNanos + 1);
        lastNameNanos = nanos;
        String suffix = "." + Long.toHexString(nanos);
        String pod = event.pod().name();
        if (pod.length() + suffix.length() > MAX_NAME) {
            pod = pod.substring(0, MAX_NAME - suffix.length());
        }
        // a cut pod name may end in '.' or '-', which a DNS subdomain may not have before '.'
        while (!pod.isEmpty() && !Character.isLetterOrDigit(pod.charAt(pod.length() - 1))) {
            pod = pod.substring(0, pod.length() - 1);
        }
        return (pod.isEmpty() ? "pod" : pod) + suffix;
    }
}
