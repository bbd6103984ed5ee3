package io.driveralias.agent.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The meters of the watched runtimes: whether each is up, and the events each sent, by action.
 * Apart from {@link MicrometerRepairMetrics} because the {@code runtime} label is a vocabulary of
 * its own, and because Docker's series from before the agent watched other runtimes
 * ({@code driver_alias_docker_up}, {@code driver_alias_docker_events_total}) are kept beside the
 * runtime-neutral ones here, and only here.
 */
final class RuntimeMeters {

    private static final String DOCKER_EVENTS = "driver.alias.docker.events";
    private static final String RUNTIME_EVENTS = "driver.alias.runtime.events";
    private static final String RUNTIME_UP = "driver.alias.runtime.up";
    /**
     * The {@code runtime} label's whole set: the runtimes the agent has adapters for, and {@code nri},
     * the agent's connection to containerd as its NRI plugin. Anything else counts as "other".
     */
    private static final Set<String> RUNTIMES = Set.of("docker", "containerd", "nri");

    private final MeterRegistry registry;
    private final BoundedLabel actions = new BoundedLabel(MicrometerRepairMetrics.ACTION_LIMIT);
    /** One gauge per watched runtime, registered when the agent first says whether it is up. */
    private final Map<String, AtomicInteger> runtimeUp = new ConcurrentHashMap<>();

    /**
     * Each watched runtime at 0 until it connects: an agent that never reaches its runtime is
     * seen by the disconnect alert too. Docker's own gauge, kept for dashboards written before
     * other runtimes, only where Docker is watched: no Docker series on a containerd node.
     */
    RuntimeMeters(MeterRegistry registry, Set<String> watched) {
        this.registry = registry;
        for (String runtime : watched) {
            runtimeUp(runtimeName(runtime));
        }
    }

    void connected(String runtime, boolean up) {
        runtimeUp(runtimeName(runtime)).set(up ? 1 : 0);
    }

    /** The runtime's gauge, registered at 0 the first time; Docker's also feeds driver_alias_docker_up. */
    private AtomicInteger runtimeUp(String name) {
        return runtimeUp.computeIfAbsent(name, r -> {
            AtomicInteger value = new AtomicInteger();
            Gauge.builder(RUNTIME_UP, value, AtomicInteger::get)
                    .description("1 while the runtime's event stream is connected and it answers")
                    .tag("runtime", r)
                    .strongReference(true)
                    .register(registry);
            if (r.equals("docker")) {
                // Kept for the dashboards written before the agent watched other runtimes.
                Gauge.builder("driver.alias.docker.up", value, AtomicInteger::get)
                        .description("1 while the Docker event stream is connected (driver_alias_runtime_up{runtime=\"docker\"})")
                        .strongReference(true)
                        .register(registry);
            }
            return value;
        });
    }

    void event(String runtime, String action) {
        String name = runtimeName(runtime);
        String admitted = actions.admit(actionName(action));
        Counter.builder(RUNTIME_EVENTS)
                .description("Container runtime events received, by runtime and action")
                .tag("runtime", name)
                .tag("action", admitted)
                .register(registry)
                .increment();
        if (name.equals("docker")) {
            Counter.builder(DOCKER_EVENTS)
                    .description("Docker events received, by action")
                    .tag("action", admitted)
                    .register(registry)
                    .increment();
        }
    }

    private static String runtimeName(String runtime) {
        return RUNTIMES.contains(runtime) ? runtime : BoundedLabel.OTHER;
    }

    /** "exec_start: /bin/sh -c ..." carries a command line; only the action is a label. */
    private static String actionName(String action) {
        int colon = action == null ? -1 : action.indexOf(':');
        return colon < 0 ? action : action.substring(0, colon);
    }
}
