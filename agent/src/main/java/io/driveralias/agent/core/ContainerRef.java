package io.driveralias.agent.core;

import java.util.Optional;

/** A container as reports name it. {@code pod} is absent for containers the kubelet did not start. */
public record ContainerRef(String id, String name, String image, Optional<PodRef> pod) {

    public String shortId() {
        return id.length() > 12 ? id.substring(0, 12) : id;
    }

    /** "namespace/pod" when known, else the container name: what a log line should say. */
    public String displayName() {
        return pod.map(p -> p.namespace() + "/" + p.name() + "/" + p.container()).orElse(name);
    }
}
