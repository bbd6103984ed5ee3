package io.driveralias.agent.testing;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.snakeyaml.engine.v2.api.Load;
import org.snakeyaml.engine.v2.api.LoadSettings;

/**
 * The scrape job the Prometheus Operator generates from a ServiceMonitor, for a plain Prometheus
 * that scrapes a static target standing in for one agent pod behind the Service. The operator
 * turns each endpoint into a Kubernetes service discovery job whose relabelings (in this order)
 * keep the Service's endpoints that match the selector and the port, set {@code namespace},
 * {@code service}, {@code pod}, {@code container}, {@code job} (from {@code jobLabel}) and
 * {@code endpoint} from the discovered {@code __meta_kubernetes_*} labels, then apply the
 * endpoint's own {@code relabelings}, and it copies {@code honorLabels} to {@code honor_labels}.
 * Here the discovered labels are the static target's labels, so the real Prometheus applies
 * the same relabelings to the same inputs.
 *
 * <p>Only what the shipped ServiceMonitor uses is translated (selector.matchLabels, jobLabel,
 * one endpoint with port, path, honorLabels and relabelings of action replace/keep/drop/labelmap);
 * anything else fails loudly, so that a new field cannot be silently ignored.
 */
public final class ServiceMonitorScrape {

    /** What Kubernetes service discovery would report for the agent pod's endpoint. */
    public record DiscoveredPod(String namespace, String service, Map<String, String> serviceLabels, String pod,
                                String container, String node, String portName) {

        Map<String, String> metaLabels() {
            Map<String, String> meta = new LinkedHashMap<>();
            meta.put("__meta_kubernetes_namespace", namespace);
            meta.put("__meta_kubernetes_service_name", service);
            serviceLabels.forEach((k, v) -> meta.put("__meta_kubernetes_service_label_" + sanitize(k), v));
            meta.put("__meta_kubernetes_pod_name", pod);
            meta.put("__meta_kubernetes_pod_container_name", container);
            meta.put("__meta_kubernetes_pod_node_name", node);
            meta.put("__meta_kubernetes_endpoint_port_name", portName);
            meta.put("__meta_kubernetes_endpoint_address_target_kind", "Pod");
            meta.put("__meta_kubernetes_endpoint_address_target_name", pod);
            return meta;
        }
    }

    private ServiceMonitorScrape() {
    }

    /** The scrape job for {@code target} (host:port), from the ServiceMonitor's YAML. */
    @SuppressWarnings("unchecked")
    public static PrometheusServer.ScrapeJob translate(String serviceMonitorYaml, String target, DiscoveredPod pod) {
        Map<String, Object> monitor = (Map<String, Object>) new Load(LoadSettings.builder().build())
                .loadFromString(serviceMonitorYaml);
        require("ServiceMonitor".equals(monitor.get("kind")), "not a ServiceMonitor: " + monitor.get("kind"));
        Map<String, Object> metadata = (Map<String, Object>) monitor.get("metadata");
        Map<String, Object> spec = (Map<String, Object>) monitor.get("spec");
        requireOnly(spec, "jobLabel", "selector", "endpoints", "namespaceSelector");
        require(!spec.containsKey("namespaceSelector") || pod.namespace().equals(metadata.get("namespace")),
                "namespaceSelector: not translated");
        Map<String, Object> selector = (Map<String, Object>) spec.get("selector");
        requireOnly(selector, "matchLabels");
        List<Map<String, Object>> endpoints = (List<Map<String, Object>>) spec.get("endpoints");
        require(endpoints.size() == 1, "one endpoint expected");
        Map<String, Object> endpoint = endpoints.getFirst();
        requireOnly(endpoint, "port", "path", "interval", "scrapeTimeout", "honorLabels", "relabelings");
        String port = (String) endpoint.get("port");

        List<Map<String, Object>> relabel = new ArrayList<>();
        ((Map<String, String>) selector.get("matchLabels")).forEach((k, v) -> relabel.add(rule(
                "source_labels", List.of("__meta_kubernetes_service_label_" + sanitize(k)), "regex", v, "action", "keep")));
        relabel.add(rule("source_labels", List.of("__meta_kubernetes_endpoint_port_name"), "regex", port, "action", "keep"));
        relabel.add(rule("source_labels", List.of("__meta_kubernetes_endpoint_address_target_kind",
                "__meta_kubernetes_endpoint_address_target_name"), "separator", ";", "regex", "Node;(.*)",
                "replacement", "${1}", "target_label", "node"));
        relabel.add(rule("source_labels", List.of("__meta_kubernetes_endpoint_address_target_kind",
                "__meta_kubernetes_endpoint_address_target_name"), "separator", ";", "regex", "Pod;(.*)",
                "replacement", "${1}", "target_label", "pod"));
        relabel.add(rule("source_labels", List.of("__meta_kubernetes_namespace"), "target_label", "namespace"));
        relabel.add(rule("source_labels", List.of("__meta_kubernetes_service_name"), "target_label", "service"));
        relabel.add(rule("source_labels", List.of("__meta_kubernetes_pod_name"), "target_label", "pod"));
        relabel.add(rule("source_labels", List.of("__meta_kubernetes_pod_container_name"), "target_label", "container"));
        relabel.add(rule("source_labels", List.of("__meta_kubernetes_service_name"), "target_label", "job",
                "replacement", "${1}"));
        if (spec.get("jobLabel") instanceof String jobLabel) {
            relabel.add(rule("source_labels", List.of("__meta_kubernetes_service_label_" + sanitize(jobLabel)),
                    "target_label", "job", "regex", "(.+)", "replacement", "${1}"));
        }
        relabel.add(rule("target_label", "endpoint", "replacement", port));
        for (Map<String, Object> r : (List<Map<String, Object>>) endpoint.getOrDefault("relabelings", List.of())) {
            relabel.add(translate(r));
        }
        String jobName = "serviceMonitor/" + metadata.get("namespace") + "/" + metadata.get("name") + "/0";
        return new PrometheusServer.ScrapeJob(jobName, target, (String) endpoint.getOrDefault("path", "/metrics"),
                Boolean.TRUE.equals(endpoint.get("honorLabels")), pod.metaLabels(), relabel);
    }

    /** The one endpoint's {@code scrapeTimeout}, written in whole seconds ({@code 10s}). */
    @SuppressWarnings("unchecked")
    public static Duration scrapeTimeout(String serviceMonitorYaml) {
        Map<String, Object> monitor = (Map<String, Object>) new Load(LoadSettings.builder().build())
                .loadFromString(serviceMonitorYaml);
        Map<String, Object> spec = (Map<String, Object>) monitor.get("spec");
        List<Map<String, Object>> endpoints = (List<Map<String, Object>>) spec.get("endpoints");
        require(endpoints.size() == 1, "one endpoint expected");
        Object timeout = endpoints.getFirst().get("scrapeTimeout");
        require(timeout instanceof String t && t.matches("[0-9]+s"), "scrapeTimeout in whole seconds expected: " + timeout);
        return Duration.ofSeconds(Long.parseLong(((String) timeout).replace("s", "")));
    }

    /** One relabeling from the operator's camelCase to Prometheus' snake_case. */
    private static Map<String, Object> translate(Map<String, Object> r) {
        Map<String, String> names = Map.of("sourceLabels", "source_labels", "targetLabel", "target_label",
                "separator", "separator", "regex", "regex", "replacement", "replacement", "action", "action");
        Map<String, Object> out = new LinkedHashMap<>();
        r.forEach((k, v) -> {
            require(names.containsKey(k), "relabeling field " + k + ": not translated");
            out.put(names.get(k), k.equals("action") ? ((String) v).toLowerCase(Locale.ROOT) : v);
        });
        Object action = out.getOrDefault("action", "replace");
        require(List.of("replace", "keep", "drop", "labelmap").contains(action), "relabeling action " + action);
        return out;
    }

    private static Map<String, Object> rule(Object... pairs) {
        Map<String, Object> r = new LinkedHashMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            r.put((String) pairs[i], pairs[i + 1]);
        }
        return r;
    }

    /** Kubernetes SD's label name for a Kubernetes label: every character outside [a-zA-Z0-9_] becomes _. */
    static String sanitize(String name) {
        return name.replaceAll("[^a-zA-Z0-9_]", "_");
    }

    private static void requireOnly(Map<String, Object> map, String... allowed) {
        for (String key : map.keySet()) {
            require(List.of(allowed).contains(key), "field " + key + ": not translated");
        }
    }

    private static void require(boolean condition, String message) {
        if (!condition) {
            throw new AssertionError("ServiceMonitorScrape: " + message);
        }
    }
}
