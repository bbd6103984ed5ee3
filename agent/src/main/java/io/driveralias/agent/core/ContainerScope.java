package io.driveralias.agent.core;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Which containers the agent touches: not the kubelet's pod sandboxes ("pause"), and only
 * images allowed by the include/exclude globs. Pure; no image name is built in.
 */
public final class ContainerScope {

    public static final String KUBELET_TYPE_LABEL = "io.kubernetes.docker.type";

    private final List<Glob> include;
    private final List<Glob> exclude;

    public ContainerScope(List<String> includeGlobs, List<String> excludeGlobs) {
        this.include = includeGlobs.stream().map(Glob::new).toList();
        this.exclude = excludeGlobs.stream().map(Glob::new).toList();
    }

    /** Why a container is out of scope, or empty if it is in scope. */
    public Optional<String> exclusion(String image, Map<String, String> labels) {
        if ("podsandbox".equals(labels.get(KUBELET_TYPE_LABEL))) {
            return Optional.of("pod sandbox");
        }
        for (Glob g : exclude) {
            if (g.matches(image)) {
                return Optional.of("image matches --exclude-image " + g);
            }
        }
        if (!include.isEmpty() && include.stream().noneMatch(g -> g.matches(image))) {
            return Optional.of("image matches no --include-image");
        }
        return Optional.empty();
    }

    /** The pod of a container started by the kubelet, from its Docker labels. */
    public static Optional<PodRef> podOf(Map<String, String> labels) {
        String namespace = labels.get("io.kubernetes.pod.namespace");
        String name = labels.get("io.kubernetes.pod.name");
        if (namespace == null || name == null) {
            return Optional.empty();
        }
        return Optional.of(new PodRef(namespace, name, labels.getOrDefault("io.kubernetes.pod.uid", ""),
                labels.getOrDefault("io.kubernetes.container.name", "")));
    }
}
