package io.driveralias.agent.core;

import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

/**
 * What the planner may ask about a directory: the entry under one name. An effectful
 * implementation can answer lazily (stat only the names asked for); tests pass a table.
 */
@FunctionalInterface
public interface DirectoryListing {

    Optional<DirEntry> find(String name);

    static DirectoryListing of(Collection<DirEntry> entries) {
        Map<String, DirEntry> byName = new HashMap<>();
        for (DirEntry e : entries) {
            byName.put(e.name(), e);
        }
        return name -> Optional.ofNullable(byName.get(name));
    }
}
