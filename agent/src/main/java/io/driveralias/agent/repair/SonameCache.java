package io.driveralias.agent.repair;

import io.driveralias.agent.fs.FileStat;
import io.driveralias.agent.core.LruMap;
import java.util.Map;
import java.util.Optional;

/**
 * SONAMEs by file identity. Every GPU container on a node receives the same host driver
 * files (same device, inode, size and times), so each is parsed once per node, not once per
 * container. A file with the same identity cannot have different contents: any write moves
 * its ctime. Bounded, least recently used out first.
 */
public final class SonameCache {

    private record Key(long dev, long inode, long size, long mtimeNanos, long ctimeNanos) {
    }

    private final Map<Key, Optional<String>> entries;

    public SonameCache(int capacity) {
        this.entries = new LruMap<>(capacity);
    }

    public synchronized Optional<Optional<String>> get(FileStat stat) {
        return Optional.ofNullable(entries.get(key(stat)));
    }

    public synchronized void put(FileStat stat, Optional<String> soname) {
        entries.put(key(stat), soname);
    }

    private static Key key(FileStat s) {
        return new Key(s.dev(), s.inode(), s.size(), s.mtimeNanos(), s.ctimeNanos());
    }
}
