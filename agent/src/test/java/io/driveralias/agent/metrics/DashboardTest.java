package io.driveralias.agent.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.snakeyaml.engine.v2.api.Load;
import org.snakeyaml.engine.v2.api.LoadSettings;

/** grafana/driver-alias-agent.json imports anywhere (file provisioning, the sidecar, the UI) and asks the chosen Prometheus. */
class DashboardTest {

    private static final String DATASOURCE = "${datasource}";

    private final JsonNode dashboard = parse(RepoFiles.read(PromQueries.DASHBOARD));

    @Test
    void isAProvisionableDashboardWithAFixedUid() {
        assertThat(dashboard.path("uid").asText()).isEqualTo("driver-alias-agent");
        assertThat(dashboard.path("title").asText()).isNotBlank();
        assertThat(dashboard.path("schemaVersion").isInt()).as("schemaVersion").isTrue();
        // An id belongs to one Grafana's database; provisioning a file that has one clashes.
        assertThat(dashboard.has("id") && !dashboard.get("id").isNull()).as("has an id").isFalse();
        // __inputs is the UI's export-for-sharing form, which provisioning does not resolve.
        assertThat(dashboard.has("__inputs")).as("has __inputs").isFalse();
    }

    @Test
    void letsTheViewerChooseThePrometheusAndTheNodes() {
        JsonNode datasource = variable("datasource");
        assertThat(datasource.path("type").asText()).isEqualTo("datasource");
        assertThat(datasource.path("query").asText()).isEqualTo("prometheus");

        JsonNode node = variable("node");
        assertThat(node.path("type").asText()).isEqualTo("query");
        assertThat(node.path("datasource").path("uid").asText()).isEqualTo(DATASOURCE);
        assertThat(node.path("multi").asBoolean()).isTrue();
        assertThat(node.path("includeAll").asBoolean()).isTrue();
        assertThat(node.path("query").asText()).isEqualTo("label_values(driver_alias_build_info{job=\"driver-alias-agent\"}, node)");
    }

    /**
     * On-call reads it by node, and only the agent's series: every selector of every query
     * (the JVM and process panels included, whose metric names every Java service exports)
     * names the job and the chosen nodes, and none keys on the scrape address.
     */
    @Test
    void everySelectorIsTheAgentsJobOnTheChosenNodes() {
        java.util.regex.Pattern selector = java.util.regex.Pattern.compile("([a-z_:]+)\\{([^}]*)}");
        for (PromQueries.Query q : PromQueries.dashboard(RepoFiles.read(PromQueries.DASHBOARD))) {
            assertThat(q.expr()).as(q.origin()).doesNotContain("instance");
            if (q.origin().equals("dashboard variable node")) {
                continue; // lists the nodes: it cannot filter by them
            }
            java.util.regex.Matcher m = selector.matcher(q.expr());
            int selectors = 0;
            while (m.find()) {
                selectors++;
                assertThat(m.group(2)).as(q.origin() + ": " + m.group()).contains("job=\"driver-alias-agent\"")
                        .contains("node=~\"$node\"");
            }
            assertThat(selectors).as(q.origin() + " has a selector").isPositive();
            assertThat(q.expr()).as(q.origin() + ": a metric without a selector")
                    .doesNotContainPattern("\\b(driver_alias|jvm|process)_\\w+(?![\\w{])");
        }
    }

    @Test
    void everyPanelAndQueryUsesTheChosenDatasource() {
        List<JsonNode> panels = panels();
        assertThat(panels).isNotEmpty();
        Set<Integer> ids = new HashSet<>();
        for (JsonNode panel : panels) {
            String name = "panel '" + panel.path("title").asText() + "'";
            assertThat(ids.add(panel.path("id").asInt())).as("%s has a unique id", name).isTrue();
            assertThat(panel.path("gridPos").isObject()).as("%s has a gridPos", name).isTrue();
            assertThat(panel.path("datasource").path("uid").asText()).as(name).isEqualTo(DATASOURCE);
            assertThat(panel.path("targets").size()).as("%s has queries", name).isPositive();
            for (JsonNode target : panel.path("targets")) {
                assertThat(target.path("datasource").path("uid").asText()).as(name).isEqualTo(DATASOURCE);
                assertThat(target.path("expr").asText()).as(name).isNotBlank();
            }
        }
    }

    @Test
    void showsWhatTheIssueAsksFor() {
        String queries = String.join("\n", PromQueries.dashboard(RepoFiles.read(PromQueries.DASHBOARD)).stream()
                .map(PromQueries.Query::expr).toList());

        assertThat(queries).contains(
                "driver_alias_container_unrepaired{",
                "driver_alias_links_created_total{",
                "driver_alias_repair_failures_total{",
                "histogram_quantile(0.9, sum by (le) (rate(driver_alias_exposure_seconds_bucket{",
                "histogram_quantile(0.9, sum by (le) (rate(driver_alias_repair_duration_seconds_bucket{",
                "driver_alias_runtime_up{",
                "driver_alias_runtime_events_total{",
                "driver_alias_host_driver_files{",
                "jvm_memory_used_bytes{",
                "process_cpu_seconds_total{");
        // Runtime-neutral: Docker's own series exist only on Docker nodes, so a panel built on them
        // would count a containerd node as broken, or miss it.
        assertThat(queries).doesNotContain("driver_alias_docker_");
        JsonNode table = panels().stream().filter(p -> p.path("type").asText().equals("table")
                && p.path("targets").get(0).path("expr").asText().startsWith("driver_alias_container_unrepaired"))
                .findFirst().orElseThrow();
        // The columns on-call reads, in this order; the scrape's own labels hidden.
        JsonNode organize = table.path("transformations").get(0).path("options");
        List<String> columns = new ArrayList<>();
        organize.path("indexByName").properties().stream()
                .sorted(java.util.Comparator.comparingInt(e -> e.getValue().asInt())).forEach(e -> columns.add(e.getKey()));
        assertThat(columns).startsWith("namespace", "pod", "container", "node", "reason");
        assertThat(organize.path("excludeByName").path("instance").asBoolean()).isTrue();
    }

    /** The Grafana sidecar imports k8s/base/060-grafana-dashboard-configmap.yaml: it must hold this very file. */
    @Test
    @SuppressWarnings("unchecked")
    void theConfigMapHoldsExactlyTheDashboardFile() {
        Map<String, Object> configMap = (Map<String, Object>) new Load(LoadSettings.builder().build())
                .loadFromString(RepoFiles.read("k8s/base/060-grafana-dashboard-configmap.yaml"));

        assertThat(configMap).containsEntry("apiVersion", "v1").containsEntry("kind", "ConfigMap");
        Map<String, Object> metadata = (Map<String, Object>) configMap.get("metadata");
        assertThat(metadata).containsEntry("namespace", "driver-alias");
        assertThat((Map<String, Object>) metadata.get("labels")).containsEntry("grafana_dashboard", "1");
        assertThat((Map<String, Object>) configMap.get("data"))
                .as("data of k8s/base/060-grafana-dashboard-configmap.yaml; run k8s/alerts/sync-manifests.sh after editing the dashboard")
                .containsOnlyKeys("driver-alias-agent.json")
                .containsEntry("driver-alias-agent.json", RepoFiles.read(PromQueries.DASHBOARD));
    }

    private JsonNode variable(String name) {
        for (JsonNode variable : dashboard.path("templating").path("list")) {
            if (variable.path("name").asText().equals(name)) {
                return variable;
            }
        }
        throw new AssertionError("no template variable " + name);
    }

    /** All panels, those inside rows too; rows themselves hold no queries. */
    private List<JsonNode> panels() {
        List<JsonNode> all = new ArrayList<>();
        collect(dashboard.path("panels"), all);
        return all;
    }

    private static void collect(JsonNode panels, List<JsonNode> into) {
        for (JsonNode panel : panels) {
            if (panel.path("type").asText().equals("row")) {
                collect(panel.path("panels"), into);
            } else {
                into.add(panel);
            }
        }
    }

    private static JsonNode parse(String json) {
        try {
            return new ObjectMapper().readTree(json);
        } catch (Exception e) {
            throw new AssertionError("not JSON: " + e.getMessage(), e);
        }
    }
}
