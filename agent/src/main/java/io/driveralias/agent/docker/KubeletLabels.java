package io.driveralias.agent.docker;

import static io.driveralias.agent.docker.JsonReading.strings;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.driveralias.agent.json.CappedStrings;
import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/**
 * The kubelet's labels on Docker's containers (dockershim, cri-dockerd): the few the agent reads,
 * and trusted only on a container the kubelet named.
 */
final class KubeletLabels {

    /** The label the kubelet puts on a pod's sandbox ("pause") container. */
    static final String TYPE_LABEL = "io.kubernetes.docker.type";
    /** The kubelet's labels the agent reads. */
    private static final Set<String> NAMES = Set.of("io.kubernetes.pod.name", "io.kubernetes.pod.namespace",
            "io.kubernetes.pod.uid", "io.kubernetes.container.name", TYPE_LABEL);

    private KubeletLabels() {
    }

    /** The kubelet's labels the agent reads, by name: an image may add thousands more under the same prefix. */
    static Map<String, String> read(JsonParser p, JsonToken start) throws IOException {
        Map<String, String> labels = new HashMap<>();
        strings(p, start, NAMES::contains, labels);
        labels.values().removeIf(CappedStrings::isCut);
        return labels;
    }

    /**
     * The kubelet's labels, where the container is the kubelet's: Docker copies an image's labels
     * onto its containers, so an image (or whoever runs it) could name another pod, or call its
     * container a sandbox to be left alone. The kubelet (dockershim, cri-dockerd) names its
     * containers {@code k8s_<container>_<pod>_<namespace>_<uid>_<attempt>}, its sandboxes
     * {@code k8s_POD_...}, and no image chooses a container's name: the labels count only where
     * that name says the same. Elsewhere, no pod and no sandbox.
     */
    static Map<String, String> kubeletsOwn(String name, Map<String, String> labels) {
        if (labels.isEmpty()) {
            return labels;
        }
        String[] parts = name.split("_", -1);
        if (parts.length != 6 || !parts[0].equals("k8s")) {
            return Map.of();
        }
        boolean sandbox = "podsandbox".equals(labels.get(TYPE_LABEL));
        boolean sameContainer = sandbox ? parts[1].equals("POD")
                : !parts[1].equals("POD") && parts[1].equals(labels.get("io.kubernetes.container.name"));
        boolean samePod = parts[2].equals(labels.get("io.kubernetes.pod.name"))
                && parts[3].equals(labels.get("io.kubernetes.pod.namespace"))
                && parts[4].equals(labels.get("io.kubernetes.pod.uid"));
        return sameContainer && samePod ? labels : Map.of();
    }

    /** Whether the kubelet's own labels call the container a pod's sandbox. */
    static boolean isSandbox(Map<String, String> labels) {
        return "podsandbox".equals(labels.get(TYPE_LABEL));
    }
}
