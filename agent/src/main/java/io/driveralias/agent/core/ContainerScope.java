package io.driveralias.agent.core;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Which containers the agent touches: not pod sandboxes ("pause"), and only
 * images allowed by the include/exclude globs. Pure; no image name is built in.
 */
public final class ContainerScope {

    private final List<Glob> include;
    private final List<Glob> exclude;

    public ContainerScope(List<String> includeGlobs, List<String> excludeGlobs) {
        this.include = includeGlobs.stream().map(Glob::new).toList();
        this.exclude = excludeGlobs.stream().map(Glob::new).toList();
    }

    /** Why a container is out of scope, or empty if it is in scope. */
    public Optional<String> exclusion(ContainerInfo info) {
        if (info.sandbox()) {
            return Optional.of("pod sandbox");
        }
        String image = info.image();
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

    /** The pod of a container started by the kubelet, from its labels (the same keys on Docker and containerd). */
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
