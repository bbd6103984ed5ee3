package io.driveralias.agent.metrics;

import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.core.DriverLoad;
import io.driveralias.agent.core.FailureReason;
import io.driveralias.agent.core.PodRef;
import io.driveralias.agent.core.Printable;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.util.Collection;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The series of the containers still missing an alias: their count, and one gauge per container
 * that lives only while it is unrepaired; and of the GPU containers that will load a driver not
 * matching the node's module, one gauge each while they do. Apart from {@link MicrometerRepairMetrics} because
 * these are the only series whose labels come from containers (names, ids, pods), so their
 * escaping and capping is kept in one place.
 */
final class UnrepairedContainers {

    private static final String UNREPAIRED_CONTAINERS = "driver.alias.unrepaired.containers";
    private static final String CONTAINER_UNREPAIRED = "driver.alias.container.unrepaired";
    private static final String CONTAINER_DRIVER_MISMATCH = "driver.alias.container.driver.mismatch";
    /** Kubernetes names are at most 253 characters; a Docker label can be anything. */
    private static final int MAX_CONTAINER_LABEL = 253;

    private record Series(Tags tags, Meter gauge) {
    }

    private final MeterRegistry registry;
    private final Map<String, Series> unrepaired = new ConcurrentHashMap<>();
    private final Map<String, Series> mismatched = new ConcurrentHashMap<>();

    UnrepairedContainers(MeterRegistry registry) {
        this.registry = registry;
        Gauge.builder(UNREPAIRED_CONTAINERS, unrepaired, Map::size)
                .description("Running in-scope containers still missing a driver alias")
                .strongReference(true)
                .register(registry);
    }

    void unrepaired(ContainerRef container, Collection<FailureReason> reasons) {
        set(unrepaired, container.id(), containerTags(container).and("reason", RepairMetrics.mainReason(reasons).label()),
                CONTAINER_UNREPAIRED, "1 for each running in-scope container still missing a driver alias");
    }

    void resolved(String containerId) {
        remove(unrepaired, containerId);
    }

    /** The library named is the one the container's verdict is about; its version as its file's name says. */
    void driverMismatch(ContainerRef container, DriverLoad load) {
        DriverLoad.Loaded library = load.principal().orElseThrow();
        set(mismatched, container.id(), containerTags(container).and("loads", load.verdict().label())
                        .and("library", labelValue(library.soname())).and("version", labelValue(library.version().orElse(""))),
                CONTAINER_DRIVER_MISMATCH, "1 for each running GPU container that will load a driver library not matching"
                        + " the node's kernel module");
    }

    void driverMatched(String containerId) {
        remove(mismatched, containerId);
    }

    /** One series per container in {@code family}, replaced when its labels change. */
    private void set(Map<String, Series> family, String containerId, Tags tags, String name, String description) {
        family.compute(containerId, (id, old) -> {
            if (old != null && old.tags().equals(tags)) {
                return old;
            }
            if (old != null) {
                registry.remove(old.gauge());
            }
            Meter gauge = Gauge.builder(name, () -> 1).description(description).tags(tags).register(registry);
            return new Series(tags, gauge);
        });
    }

    private void remove(Map<String, Series> family, String containerId) {
        family.computeIfPresent(containerId, (id, series) -> {
            registry.remove(series.gauge());
            return null;
        });
    }

    private static Tags containerTags(ContainerRef container) {
        PodRef pod = container.pod().orElse(null);
        String name = pod != null ? pod.container() : stripSlash(container.name());
        return Tags.of(
                "namespace", pod != null ? labelValue(pod.namespace()) : "",
                "pod", pod != null ? labelValue(pod.name()) : "",
                "container", labelValue(name),
                "container_id", labelValue(container.id()));
    }

    /** Docker names containers "/name" in its API; people know them as "name". */
    private static String stripSlash(String name) {
        return name != null && name.startsWith("/") ? name.substring(1) : name;
    }

    /**
     * A label value from container data (a Docker label can hold anything): control characters,
     * line breaks and bidi overrides escaped as in the log lines ({@link Printable}), so a
     * dashboard, a terminal running curl or an alert message shows what was there, and capped.
     */
    static String labelValue(String value) {
        return Printable.of(value, MAX_CONTAINER_LABEL);
    }
}
