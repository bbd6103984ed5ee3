package io.driveralias.agent.core;

/** The pod a container belongs to, from the kubelet's Docker labels. */
public record PodRef(String namespace, String name, String uid, String container) {
}
