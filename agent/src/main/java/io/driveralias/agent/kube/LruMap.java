package io.driveralias.agent.kube;

import java.io.Serial;
import java.util.LinkedHashMap;
import java.util.Map;

/** A map that forgets its least recently used entry beyond {@code capacity}. Not thread-safe. */
final class LruMap<K, V> extends LinkedHashMap<K, V> {

    @Serial
    private static final long serialVersionUID = 1L;

    private final int capacity;

    LruMap(int capacity) {
        super(16, 0.75f, true);
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be positive: " + capacity);
        }
        this.capacity = capacity;
    }

    @Override
    protected boolean removeEldestEntry(Map.Entry<K, V> eldest) {
        return size() > capacity;
    }
}
