package io.driveralias.agent.kube;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The install manifests in {@code k8s/}, read the way the tests need them: one file as it is,
 * or a whole variant (the base or an overlay) as {@code kubectl kustomize} renders it, or its
 * twin from the Helm chart as {@code helm template} renders it.
 */
final class Manifests {

    /** Every variant an operator can apply with {@code kubectl apply -k k8s/<variant>}. */
    static final List<String> VARIANTS = List.of(
            "base", "overlays/prometheus-operator", "overlays/kube-prometheus-stack", "overlays/namespace");

    /** The prefix of a chart install: {@code chart/<variant>} is the Helm chart's twin of that variant ({@link HelmChart}). */
    static final String CHART = "chart/";

    /** Every way to install the agent: each kustomize variant, and the Helm chart with that variant's documented values. */
    static final List<String> INSTALLS = java.util.stream.Stream.concat(VARIANTS.stream(),
            VARIANTS.stream().map(v -> CHART + v)).toList();

    /**
     * The kustomization that creates an install's namespace, apart from the install itself
     * ({@code kubectl apply -k} it first; {@code kubectl delete -k} or {@code helm uninstall}
     * leaves it).
     */
    static String namespaceKustomization(String install) {
        return variantOf(install).equals("overlays/namespace") ? "overlays/namespace/create-namespace" : "namespace";
    }

    /** The namespace an install puts the agent in. */
    static String namespaceOf(String install) {
        return variantOf(install).equals("overlays/namespace") ? "gpu-system" : "driver-alias";
    }

    /** The kustomize variant of an install: itself, or the one a chart install is the twin of. */
    static String variantOf(String install) {
        return install.startsWith(CHART) ? HelmChart.kustomizeTwin(install) : install;
    }

    static final KubernetesSerialization SERIALIZATION = new KubernetesSerialization();

    private Manifests() {
    }

    /** {@code k8s/} at the repository root; surefire runs in {@code agent/}. */
    static Path directory() {
        Path base = Path.of(System.getProperty("basedir", ".")).toAbsolutePath();
        for (Path dir = base; dir != null; dir = dir.getParent()) {
            if (Files.isRegularFile(dir.resolve("k8s/base/kustomization.yaml"))) {
                return dir.resolve("k8s");
            }
        }
        throw new IllegalStateException("no k8s/base/kustomization.yaml above " + base);
    }

    static Map<String, Object> kustomization(String variant) throws IOException {
        try (InputStream in = Files.newInputStream(directory().resolve(variant).resolve("kustomization.yaml"))) {
            return SERIALIZATION.unmarshal(in, new tools.jackson.core.type.TypeReference<Map<String, Object>>() {
            });
        }
    }

    /** The files a variant's kustomization.yaml lists under {@code resources}. */
    @SuppressWarnings("unchecked")
    static List<String> resources(String variant) throws IOException {
        return (List<String>) kustomization(variant).get("resources");
    }

    /**
     * An install as {@code kubectl apply -k} (a variant) or {@code helm install} (a chart install)
     * would send it, typed by fabric8.
     */
    static List<HasMetadata> render(String install) {
        return install.startsWith(CHART) ? HelmChart.render(install) : render(directory().resolve(install));
    }

    /** Any kustomization directory (an overlay of one's own, a changed copy), rendered and typed. */
    static List<HasMetadata> render(Path kustomization) {
        return parse(Kustomize.build(kustomization));
    }

    /** A YAML stream of objects, typed; documents with nothing but comments (helm's) are none. */
    static List<HasMetadata> parse(String yaml) {
        List<HasMetadata> resources = new ArrayList<>();
        for (String document : yaml.split("(?m)^---\\s*$")) {
            if (!document.replaceAll("(?m)^#.*$", "").isBlank()) {
                resources.add(SERIALIZATION.unmarshal(document));
            }
        }
        return resources;
    }

    /** The one object of a kind (and type) in a rendered variant. */
    static <T extends HasMetadata> T only(List<HasMetadata> rendered, String kind, Class<T> type) {
        List<HasMetadata> found = rendered.stream().filter(r -> r.getKind().equals(kind)).toList();
        if (found.size() != 1) {
            throw new AssertionError("expected one " + kind + ", found " + found.size());
        }
        return type.cast(found.getFirst());
    }

    /**
     * Fields fabric8 did not recognise anywhere in a typed object: a misspelt or misplaced key
     * would otherwise parse fine and be silently dropped by the API server (or rejected by it).
     * Returns the paths of such fields, e.g. {@code spec.template.spec.tolerationz}.
     */
    static List<String> unknownFields(Object typed) {
        List<String> found = new ArrayList<>();
        walk(typed, "", found, java.util.Collections.newSetFromMap(new IdentityHashMap<>()));
        return found;
    }

    private static void walk(Object value, String path, List<String> found, Set<Object> seen) {
        if (value == null || !seen.add(value)) {
            return;
        }
        if (value instanceof Collection<?> items) {
            int i = 0;
            for (Object item : items) {
                walk(item, path + "[" + i++ + "]", found, seen);
            }
            return;
        }
        if (value instanceof Map<?, ?> map) {
            map.forEach((k, v) -> walk(v, path + "[" + k + "]", found, seen));
            return;
        }
        if (!value.getClass().getPackageName().startsWith("io.fabric8.kubernetes.api.model")) {
            return;
        }
        for (Method getter : value.getClass().getMethods()) {
            if (getter.getParameterCount() != 0 || Modifier.isStatic(getter.getModifiers())
                    || !getter.getName().startsWith("get") || getter.getName().equals("getClass")) {
                continue;
            }
            Object child;
            try {
                child = getter.invoke(value);
            } catch (IllegalAccessException | InvocationTargetException e) {
                continue;
            }
            String name = Character.toLowerCase(getter.getName().charAt(3)) + getter.getName().substring(4);
            if (name.equals("additionalProperties")) {
                ((Map<?, ?>) child).keySet().forEach(k -> found.add(path.isEmpty() ? "" + k : path + "." + k));
            } else {
                walk(child, path.isEmpty() ? name : path + "." + name, found, seen);
            }
        }
    }
}
