package io.driveralias.agent.repair;

import io.driveralias.agent.core.DriverLibrary;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The driver files found in a root, grouped by directory (insertion order: injected first),
 * what could not be read, and temporary links an interrupted repair left, by directory.
 */
public record DriverInventory(Optional<String> driverVersion, Map<String, List<LocatedLibrary>> byDirectory,
                              List<Problem> problems, Map<String, Set<String>> leftovers) {

    public DriverInventory {
        byDirectory = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(byDirectory));
        problems = List.copyOf(problems);
        leftovers = Map.copyOf(leftovers);
    }

    public boolean hasDriver() {
        return byDirectory.values().stream().anyMatch(l -> !l.isEmpty());
    }

    public List<DriverLibrary> libraries(String directory) {
        return byDirectory.getOrDefault(directory, List.of()).stream().map(LocatedLibrary::library).toList();
    }
}
