package io.driveralias.agent.logging;

import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.core.PodRef;
import io.driveralias.agent.core.Printable;
import org.slf4j.MDC;

/**
 * Names the container a thread works on in every log line it writes, until closed:
 * <pre>{@code
 * try (var ignored = Mdc.container(ref)) {
 *     log.warn("cannot repair: {}", reason);
 * }
 * }</pre>
 * Closing puts back what the MDC held before, so scopes nest.
 */
public final class Mdc implements AutoCloseable {

    public static final String CONTAINER_ID = "container_id";
    /** "namespace/name" of the container's pod. */
    public static final String POD = "pod";

    private final String previousContainerId;
    private final String previousPod;

    private Mdc(String containerId, String pod) {
        previousContainerId = MDC.get(CONTAINER_ID);
        previousPod = MDC.get(POD);
        put(CONTAINER_ID, containerId);
        put(POD, pod);
    }

    public static Mdc container(ContainerRef container) {
        return new Mdc(container.id(), container.pod().map(Mdc::podName).orElse(null));
    }

    /** For a container known only by its id, e.g. from a Docker event. */
    public static Mdc containerId(String containerId) {
        return new Mdc(containerId, null);
    }

    @Override
    public void close() {
        put(CONTAINER_ID, previousContainerId);
        put(POD, previousPod);
    }

    private static String podName(PodRef pod) {
        return Printable.of(pod.namespace() + "/" + pod.name());
    }

    private static void put(String key, String value) {
        if (value == null) {
            MDC.remove(key);
        } else {
            MDC.put(key, value);
        }
    }
}
