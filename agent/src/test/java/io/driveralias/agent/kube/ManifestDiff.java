package io.driveralias.agent.kube;

import io.fabric8.kubernetes.api.model.HasMetadata;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

/**
 * What applying one set of objects over another changes, field by field, as an operator reads a
 * {@code helm diff}: {@code DaemonSet driver-alias/driver-alias-agent:
 * spec.template.spec.containers[agent].resources.requests.cpu: 20m -> 500m}. Items of a list that
 * all have a name (containers, variables, volumes) are matched by name, not position, so that one
 * variable added is one change.
 */
final class ManifestDiff {

    /** One changed field; {@code before} or {@code after} is null where the field (or the object) is new or gone. */
    record Change(String object, String path, Object before, Object after) {

        @Override
        public String toString() {
            return object + (path.isEmpty() ? "" : ": " + path) + ": " + shown(before) + " -> " + shown(after);
        }

        private static String shown(Object value) {
            String text = value == null ? "(none)" : String.valueOf(value).replace("\n", "\\n");
            return text.length() > 80 ? text.substring(0, 77) + "..." : text;
        }
    }

    private ManifestDiff() {
    }

    /** Kind, namespace and name: what Kubernetes, and Helm, know an object by. */
    static String identity(HasMetadata object) {
        String namespace = object.getMetadata().getNamespace();
        return object.getKind() + " " + (namespace == null ? "" : namespace + "/") + object.getMetadata().getName();
    }

    static List<Change> changes(List<HasMetadata> before, List<HasMetadata> after) {
        Map<String, Object> old = trees(before);
        Map<String, Object> now = trees(after);
        Set<String> objects = new LinkedHashSet<>(old.keySet());
        objects.addAll(now.keySet());
        List<Change> changes = new ArrayList<>();
        for (String object : objects) {
            diff(object, "", old.get(object), now.get(object), changes);
        }
        return changes;
    }

    private static Map<String, Object> trees(List<HasMetadata> objects) {
        Map<String, Object> trees = new TreeMap<>();
        for (HasMetadata object : objects) {
            trees.put(identity(object), Manifests.SERIALIZATION.unmarshal(Manifests.SERIALIZATION.asJson(object), Map.class));
        }
        return trees;
    }

    private static void diff(String object, String path, Object before, Object after, List<Change> changes) {
        if (Objects.equals(before, after)) {
            return;
        }
        if (before == null || after == null) {
            changes.add(new Change(object, path, before, after));
            return;
        }
        if (before instanceof String b && after instanceof String a && (b.contains("\n") || a.contains("\n"))) {
            changes.add(lines(object, path, b, a));
            return;
        }
        if (before instanceof Map<?, ?> b && after instanceof Map<?, ?> a) {
            Set<Object> keys = new LinkedHashSet<>(b.keySet());
            keys.addAll(a.keySet());
            for (Object key : keys) {
                diff(object, path.isEmpty() ? String.valueOf(key) : path + "." + key, b.get(key), a.get(key), changes);
            }
        } else if (before instanceof List<?> b && after instanceof List<?> a && named(b) && named(a)) {
            diffByName(object, path, byName(b), byName(a), changes);
        } else if (before instanceof List<?> b && after instanceof List<?> a && b.size() == a.size()) {
            for (int i = 0; i < b.size(); i++) {
                diff(object, path + "[" + i + "]", b.get(i), a.get(i), changes);
            }
        } else if (before instanceof List<?> b && after instanceof List<?> a) {
            // Items without a name, some added or removed: each one that is only on one side.
            b.stream().filter(i -> !a.contains(i)).forEach(i -> changes.add(new Change(object, path + "[-]", i, null)));
            a.stream().filter(i -> !b.contains(i)).forEach(i -> changes.add(new Change(object, path + "[+]", null, i)));
        } else {
            changes.add(new Change(object, path, before, after));
        }
    }

    private static void diffByName(String object, String path, Map<String, Object> before, Map<String, Object> after,
            List<Change> changes) {
        Set<String> names = new LinkedHashSet<>(before.keySet());
        names.addAll(after.keySet());
        for (String name : names) {
            diff(object, path + "[" + name + "]", before.get(name), after.get(name), changes);
        }
    }

    /** A text of several lines (the dashboard, a rule's expression): how many of its lines went, and came. */
    private static Change lines(String object, String path, String before, String after) {
        List<String> old = before.lines().toList();
        List<String> now = after.lines().toList();
        long gone = old.stream().filter(l -> !now.contains(l)).count();
        long added = now.stream().filter(l -> !old.contains(l)).count();
        return new Change(object, path, old.size() + " lines", now.size() + " lines (" + gone + " gone, " + added + " new)");
    }

    /** What names the items of a list: containers, variables and volumes their name, alert rules their alert. */
    private static String key(Object item) {
        if (item instanceof Map<?, ?> m) {
            Object name = m.get("name") != null ? m.get("name") : m.get("alert");
            return name instanceof String s ? s : null;
        }
        return null;
    }

    private static boolean named(List<?> items) {
        return !items.isEmpty() && items.stream().allMatch(i -> key(i) != null)
                && items.stream().map(ManifestDiff::key).distinct().count() == items.size();
    }

    private static Map<String, Object> byName(List<?> items) {
        Map<String, Object> named = new LinkedHashMap<>();
        items.forEach(i -> named.put(key(i), i));
        return named;
    }
}
