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

/** The install manifests in {@code k8s/}, read the way the tests need them. */
final class Manifests {

    static final KubernetesSerialization SERIALIZATION = new KubernetesSerialization();

    private Manifests() {
    }

    /** {@code k8s/} at the repository root; surefire runs in {@code agent/}. */
    static Path directory() {
        Path base = Path.of(System.getProperty("basedir", ".")).toAbsolutePath();
        for (Path dir = base; dir != null; dir = dir.getParent()) {
            if (Files.isRegularFile(dir.resolve("k8s/kustomization.yaml"))) {
                return dir.resolve("k8s");
            }
        }
        throw new IllegalStateException("no k8s/kustomization.yaml above " + base);
    }

    static Map<String, Object> kustomization() throws IOException {
        try (InputStream in = Files.newInputStream(directory().resolve("kustomization.yaml"))) {
            return SERIALIZATION.unmarshal(in, new tools.jackson.core.type.TypeReference<Map<String, Object>>() {
            });
        }
    }

    /** The files {@code kubectl apply -k} applies, as kustomization.yaml lists them. */
    @SuppressWarnings("unchecked")
    static List<String> resources() throws IOException {
        return (List<String>) kustomization().get("resources");
    }

    /** One manifest as fabric8 types it: a typed object, or a GenericKubernetesResource for CRDs. */
    static HasMetadata load(String file) throws IOException {
        try (InputStream in = Files.newInputStream(directory().resolve(file))) {
            return SERIALIZATION.unmarshal(in);
        }
    }

    static <T extends HasMetadata> T load(String file, Class<T> type) throws IOException {
        HasMetadata resource = load(file);
        if (!type.isInstance(resource)) {
            throw new AssertionError(file + " is a " + resource.getClass().getSimpleName() + ", not a "
                    + type.getSimpleName());
        }
        return type.cast(resource);
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
