package io.driveralias.agent.core;

import java.util.Optional;

/** A container as reports name it. {@code pod} is absent for containers the kubelet did not start. */
public record ContainerRef(String id, String name, String image, Optional<PodRef> pod) {

    public String shortId() {
        return id.length() > 12 ? id.substring(0, 12) : id;
    }

    /**
     * "namespace/pod/container" when known, else the container name: what a log line should
     * say, escaped and capped (labels and names are the container owner's text).
     */
    public String displayName() {
        return Printable.of(pod.map(p -> p.namespace() + "/" + p.name() + "/" + p.container()).orElse(name));
    }

    /** The image reference, escaped and capped for a log line. */
    public String displayImage() {
        return Printable.of(image);
    }
}
