package io.driveralias.agent.kube;

import io.driveralias.agent.core.PodRef;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.EventBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Writes one core/v1 Event to the API server: a new object, or {@code count} and
 * {@code lastTimestamp} patched onto the one a repeat belongs to. Only create and patch,
 * as the ClusterRole allows. Used by the sender thread of {@link Fabric8PodEvents}.
 */
final class EventWriter {

    private final KubernetesClient client;
    private final String nodeName;
    private final EventCorrelator correlator;

    EventWriter(KubernetesClient client, String nodeName, EventCorrelator correlator) {
        this.client = client;
        this.nodeName = nodeName;
        this.correlator = correlator;
    }

    /** Creates or patches; a patch of an object the server no longer has becomes a create. */
    EventCorrelator.Write send(PodEvent event, EventCorrelator.Write write) {
        var events = client.v1().events().inNamespace(event.pod().namespace());
        if (write.patch()) {
            Map<String, Object> patch = new LinkedHashMap<>();
            patch.put("count", write.count());
            patch.put("lastTimestamp", timestamp(write.last()));
            // Patching through a resource() rather than withName() keeps fabric8 from GETting the
            // object first: the ClusterRole grants create and patch, not get.
            Event target = new EventBuilder().withNewMetadata()
                    .withName(write.name()).withNamespace(event.pod().namespace()).endMetadata().build();
            try {
                events.resource(target).patch(PatchContext.of(PatchType.JSON_MERGE),
                        client.getKubernetesSerialization().asJson(patch));
                return write;
            } catch (KubernetesClientException e) {
                if (e.getCode() != 404) {
                    throw e;
                }
                write = correlator.fresh(event);
            }
        }
        try {
            events.resource(toEvent(event, write)).create();
        } catch (KubernetesClientException e) {
            // 409: an earlier attempt that timed out had in fact created it.
            if (e.getCode() != 409) {
                throw e;
            }
        }
        return write;
    }

    private Event toEvent(PodEvent event, EventCorrelator.Write write) {
        PodRef pod = event.pod();
        return new EventBuilder()
                .withNewMetadata()
                    .withName(write.name())
                    .withNamespace(pod.namespace())
                .endMetadata()
                .withNewInvolvedObject()
                    .withApiVersion("v1")
                    .withKind("Pod")
                    .withNamespace(pod.namespace())
                    .withName(pod.name())
                    .withUid(pod.uid().isBlank() ? null : pod.uid())
                    .withFieldPath(event.fieldPath())
                .endInvolvedObject()
                .withType(event.type().value())
                .withReason(event.reason())
                .withMessage(event.message())
                .withNewSource()
                    .withComponent(Fabric8PodEvents.COMPONENT)
                    .withHost(nodeName)
                .endSource()
                .withReportingComponent(Fabric8PodEvents.COMPONENT)
                .withReportingInstance(nodeName)
                .withFirstTimestamp(timestamp(write.first()))
                .withLastTimestamp(timestamp(write.last()))
                .withCount(write.count())
                .build();
    }

    /**
     * Server errors, throttling and anything without an HTTP answer (timeouts, refused
     * connections) may pass; any other answer (403: RBAC, 422: invalid) will not.
     */
    static boolean retryable(KubernetesClientException e) {
        int code = e.getCode();
        return code <= 0 || code >= 500 || code == 429;
    }

    /** The API server's own words when it answered, else what went wrong on the way. */
    static String describe(KubernetesClientException e) {
        if (e.getCode() > 0) {
            String said = e.getStatus() != null && e.getStatus().getMessage() != null
                    ? e.getStatus().getMessage() : e.getMessage();
            String hint = e.getCode() == 403 ? " (the agent's ClusterRole must allow create and patch on events)" : "";
            return "HTTP " + e.getCode() + ": " + said + hint;
        }
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return root == e ? String.valueOf(e.getMessage())
                : root.getClass().getSimpleName() + (root.getMessage() == null ? "" : ": " + root.getMessage());
    }

    /** Core/v1 {@code Time}: RFC 3339 in seconds. */
    static String timestamp(Instant at) {
        return at.truncatedTo(ChronoUnit.SECONDS).toString();
    }
}
