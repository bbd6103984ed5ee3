package io.driveralias.agent.kube;

import io.driveralias.agent.core.PodRef;
import java.time.Instant;

/**
 * One thing to tell a pod's owners about one of its containers, before correlation decides
 * whether it becomes a new Event object or a count on an existing one. {@code at} is when the
 * agent learnt it, not when it was sent.
 */
record PodEvent(PodRef pod, Type type, String reason, String message, Instant at) {

    /** core/v1 Event types. */
    enum Type {
        NORMAL("Normal"), WARNING("Warning");

        private final String value;

        Type(String value) {
            this.value = value;
        }

        String value() {
            return value;
        }
    }

    /** How the kubelet names a container inside its pod, for {@code involvedObject.fieldPath}. */
    String fieldPath() {
        return "spec.containers{" + pod.container() + "}";
    }
}
