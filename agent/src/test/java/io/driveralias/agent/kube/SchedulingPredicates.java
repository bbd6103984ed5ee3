package io.driveralias.agent.kube;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeSelectorRequirement;
import io.fabric8.kubernetes.api.model.NodeSelectorTerm;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Taint;
import io.fabric8.kubernetes.api.model.Toleration;
import java.util.List;
import java.util.Map;

/**
 * The kube-scheduler's node predicates that decide where a DaemonSet pod may run, as the
 * Kubernetes API reference defines them: {@code nodeSelector} (every pair must match),
 * required node affinity (the {@code nodeSelectorTerms} are ORed, the requirements inside one
 * term ANDed; operators In, NotIn, Exists, DoesNotExist, Gt, Lt; {@code matchFields} on
 * {@code metadata.name}), and taints with effect NoSchedule or NoExecute, each of which needs a
 * toleration. Pure logic, for evaluating the rendered manifests against example nodes.
 */
final class SchedulingPredicates {

    private SchedulingPredicates() {
    }

    static boolean schedulable(PodSpec pod, Node node) {
        return matchesNodeSelector(pod, labels(node)) && matchesAffinity(pod, node) && toleratesTaints(pod, node);
    }

    private static Map<String, String> labels(Node node) {
        Map<String, String> labels = node.getMetadata().getLabels();
        return labels == null ? Map.of() : labels;
    }

    private static boolean matchesNodeSelector(PodSpec pod, Map<String, String> labels) {
        Map<String, String> selector = pod.getNodeSelector();
        return selector == null || selector.entrySet().stream()
                .allMatch(e -> e.getValue().equals(labels.get(e.getKey())));
    }

    private static boolean matchesAffinity(PodSpec pod, Node node) {
        if (pod.getAffinity() == null || pod.getAffinity().getNodeAffinity() == null
                || pod.getAffinity().getNodeAffinity().getRequiredDuringSchedulingIgnoredDuringExecution() == null) {
            return true;
        }
        List<NodeSelectorTerm> terms = pod.getAffinity().getNodeAffinity()
                .getRequiredDuringSchedulingIgnoredDuringExecution().getNodeSelectorTerms();
        // An empty list of terms matches no node.
        return terms.stream().anyMatch(term -> matches(term, node));
    }

    private static boolean matches(NodeSelectorTerm term, Node node) {
        List<NodeSelectorRequirement> expressions = nullToEmpty(term.getMatchExpressions());
        List<NodeSelectorRequirement> fields = nullToEmpty(term.getMatchFields());
        if (expressions.isEmpty() && fields.isEmpty()) {
            return false; // an empty term matches nothing
        }
        Map<String, String> labels = labels(node);
        return expressions.stream().allMatch(r -> matches(r, labels))
                && fields.stream().allMatch(r -> r.getKey().equals("metadata.name")
                        && matches(r, Map.of("metadata.name", node.getMetadata().getName())));
    }

    private static boolean matches(NodeSelectorRequirement r, Map<String, String> labels) {
        String value = labels.get(r.getKey());
        List<String> values = nullToEmpty(r.getValues());
        return switch (r.getOperator()) {
            case "In" -> value != null && values.contains(value);
            case "NotIn" -> value == null || !values.contains(value);
            case "Exists" -> value != null;
            case "DoesNotExist" -> value == null;
            case "Gt" -> value != null && integer(value) != null && integer(value) > Long.parseLong(values.getFirst());
            case "Lt" -> value != null && integer(value) != null && integer(value) < Long.parseLong(values.getFirst());
            default -> throw new IllegalArgumentException("unknown operator " + r.getOperator());
        };
    }

    private static Long integer(String s) {
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static boolean toleratesTaints(PodSpec pod, Node node) {
        List<Taint> taints = node.getSpec() == null ? List.of() : nullToEmpty(node.getSpec().getTaints());
        List<Toleration> tolerations = nullToEmpty(pod.getTolerations());
        return taints.stream()
                .filter(t -> t.getEffect().equals("NoSchedule") || t.getEffect().equals("NoExecute"))
                .allMatch(t -> tolerations.stream().anyMatch(tol -> tolerates(tol, t)));
    }

    private static boolean tolerates(Toleration tol, Taint taint) {
        if (tol.getEffect() != null && !tol.getEffect().isEmpty() && !tol.getEffect().equals(taint.getEffect())) {
            return false;
        }
        if (tol.getKey() == null || tol.getKey().isEmpty()) {
            return "Exists".equals(tol.getOperator()); // an empty key with Exists tolerates every taint
        }
        if (!tol.getKey().equals(taint.getKey())) {
            return false;
        }
        return "Exists".equals(tol.getOperator())
                || java.util.Objects.equals(tol.getValue() == null ? "" : tol.getValue(),
                        taint.getValue() == null ? "" : taint.getValue());
    }

    private static <T> List<T> nullToEmpty(List<T> list) {
        return list == null ? List.of() : list;
    }
}
