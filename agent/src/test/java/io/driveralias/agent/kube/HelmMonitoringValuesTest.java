package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.ResourceQuota;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The chart's toggles and labels for what sits around the DaemonSet: the ServiceMonitor, the rules,
 * the dashboard, the NetworkPolicy and the priority quota. Each renders only when asked (or, for
 * the dashboard and the quota, until told not to), with the labels given, and keeps what the
 * alerts rely on whatever the values.
 */
class HelmMonitoringValuesTest {

    private static List<HasMetadata> render(Path tmp, String yaml) {
        return HelmChart.render(Manifests.CHART + "base", HelmChart.valuesFile(tmp, "values", yaml));
    }

    private static List<String> kinds(List<HasMetadata> rendered) {
        return rendered.stream().map(HasMetadata::getKind).toList();
    }

    @Test
    void theServiceMonitorTakesItsLabelsScrapeSettingsAndTlsAndKeepsWhatTheAlertsNeed(@TempDir Path tmp) {
        List<HasMetadata> rendered = render(tmp, """
                serviceMonitor:
                  enabled: true
                  labels: {release: prometheus-stack}
                  interval: 15s
                  scrapeTimeout: 5s
                  scheme: https
                  tlsConfig: {serverName: driver-alias-agent, ca: {secret: {name: agent-ca, key: ca.crt}}}
                  basicAuth: {username: {name: scrape, key: user}, password: {name: scrape, key: password}}
                """);
        GenericKubernetesResource monitor = Manifests.only(rendered, "ServiceMonitor", GenericKubernetesResource.class);
        List<Map<String, Object>> endpoints = monitor.get("spec", "endpoints");

        assertThat(monitor.getMetadata().getLabels()).containsEntry("release", "prometheus-stack")
                .containsEntry("app.kubernetes.io/name", "driver-alias-agent");
        assertThat(endpoints).singleElement().satisfies(e -> {
            assertThat(e).containsEntry("interval", "15s").containsEntry("scrapeTimeout", "5s")
                    .containsEntry("scheme", "https").containsEntry("honorLabels", true)
                    .containsEntry("tlsConfig", Map.of("serverName", "driver-alias-agent",
                            "ca", Map.of("secret", Map.of("name", "agent-ca", "key", "ca.crt"))));
            assertThat(e).containsKey("basicAuth").containsKey("relabelings");
        });
        assertThat((Object) monitor.get("spec", "jobLabel")).isEqualTo("app.kubernetes.io/name");
    }

    @Test
    void theRulesTakeTheirLabels(@TempDir Path tmp) {
        List<HasMetadata> rendered = render(tmp, "prometheusRule: {enabled: true, labels: {release: prometheus-stack}}\n");

        assertThat(kinds(rendered)).contains("PrometheusRule").doesNotContain("ServiceMonitor", "NetworkPolicy");
        assertThat(Manifests.only(rendered, "PrometheusRule", GenericKubernetesResource.class).getMetadata().getLabels())
                .containsEntry("release", "prometheus-stack").containsEntry("app.kubernetes.io/name", "driver-alias-agent");
    }

    /** The sidecar's label can be another (kube-prometheus-stack lets one choose it), and a folder annotation added. */
    @Test
    void theDashboardTakesTheSidecarsLabelAndFolderOrIsLeftOut(@TempDir Path tmp) {
        ConfigMap dashboard = Manifests.only(render(tmp.resolve("a"), """
                dashboard: {labels: {grafana_dashboard: "yes", team: gpu}, annotations: {grafana_folder: GPU}}
                """), "ConfigMap", ConfigMap.class);

        assertThat(dashboard.getMetadata().getLabels()).containsEntry("grafana_dashboard", "yes").containsEntry("team", "gpu");
        assertThat(dashboard.getMetadata().getAnnotations()).containsExactly(Map.entry("grafana_folder", "GPU"));
        assertThat(kinds(render(tmp.resolve("b"), "dashboard: {enabled: false}\n"))).doesNotContain("ConfigMap");
    }

    @Test
    void theNetworkPolicyAdmitsTheNamespaceGiven(@TempDir Path tmp) {
        NetworkPolicy policy = Manifests.only(render(tmp, "networkPolicy: {enabled: true, prometheusNamespace: observability}\n"),
                "NetworkPolicy", NetworkPolicy.class);

        assertThat(policy.getSpec().getIngress()).singleElement().satisfies(rule -> assertThat(rule.getFrom())
                .singleElement().satisfies(peer -> assertThat(peer.getNamespaceSelector().getMatchLabels())
                        .containsExactly(Map.entry("kubernetes.io/metadata.name", "observability"))));
    }

    /**
     * The quota follows the pods' class: it admits system-cluster-critical if that is the class, is
     * not rendered for a class of one's own (which it would not admit anyway), and goes on request.
     */
    @Test
    void theQuotaAdmitsTheCriticalClassThePodsRunWith(@TempDir Path tmp) {
        ResourceQuota quota = Manifests.only(render(tmp.resolve("a"), "priorityClassName: system-cluster-critical\n"),
                "ResourceQuota", ResourceQuota.class);

        assertThat(quota.getSpec().getScopeSelector().getMatchExpressions()).singleElement()
                .satisfies(e -> assertThat(e.getValues()).containsExactly("system-cluster-critical"));
        assertThat(kinds(render(tmp.resolve("b"), "priorityClassName: gpu-node-agents\n"))).doesNotContain("ResourceQuota");
        assertThat(kinds(render(tmp.resolve("c"), "priorityClassQuota: {enabled: false}\n"))).doesNotContain("ResourceQuota");
    }
}
