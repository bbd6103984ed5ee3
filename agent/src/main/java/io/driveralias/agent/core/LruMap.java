package io.driveralias.agent.core;

import java.io.Serial;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A map that forgets its least recently used entry beyond {@code capacity}: the bound on every
 * per-container or per-pod memory the agent keeps. Not thread-safe.
 */
public final class LruMap<K, V> extends LinkedHashMap<K, V> {

    @Serial
    private static final long serialVersionUID = 1L;

    private final int capacity;

    public LruMap(int capacity) {
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
