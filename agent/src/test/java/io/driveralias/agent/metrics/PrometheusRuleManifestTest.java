package io.driveralias.agent.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;
import org.snakeyaml.engine.v2.api.Load;
import org.snakeyaml.engine.v2.api.LoadSettings;

/** k8s/overlays/prometheus-operator/prometheusrule.yaml is the rule file for the Prometheus Operator: same groups, nothing else. */
class PrometheusRuleManifestTest {

    @Test
    @SuppressWarnings("unchecked")
    void carriesExactlyTheGroupsOfTheRuleFile() {
        Map<String, Object> manifest = load("k8s/overlays/prometheus-operator/prometheusrule.yaml");
        Map<String, Object> rules = load(PromQueries.RULES);

        assertThat(manifest).containsEntry("apiVersion", "monitoring.coreos.com/v1").containsEntry("kind", "PrometheusRule");
        Map<String, Object> metadata = (Map<String, Object>) manifest.get("metadata");
        assertThat(metadata).containsEntry("name", "driver-alias-agent").containsEntry("namespace", "driver-alias");
        assertThat((Map<String, Object>) metadata.get("labels")).containsEntry("app.kubernetes.io/name", "driver-alias-agent");
        Map<String, Object> spec = (Map<String, Object>) manifest.get("spec");
        assertThat(spec).containsOnlyKeys("groups");
        assertThat(spec.get("groups"))
                .as("spec.groups of k8s/overlays/prometheus-operator/prometheusrule.yaml; run k8s/alerts/sync-manifests.sh after editing the rules")
                .isEqualTo(rules.get("groups"));
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> load(String file) {
        return (Map<String, Object>) new Load(LoadSettings.builder().build()).loadFromString(RepoFiles.read(file));
    }
}
