package io.driveralias.agent.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.snakeyaml.engine.v2.api.Load;
import org.snakeyaml.engine.v2.api.LoadSettings;

class AlertRulesTest {

    private static final Path ALERTS = RepoFiles.path("k8s/alerts");
    private static final List<String> ALERT_NAMES = List.of(
            "DriverAliasUnrepairedContainer", "DriverAliasAgentDown", "DriverAliasAgentMissing",
            "DriverAliasRuntimeDisconnected",
            "DriverAliasRepairFailures", "DriverAliasReconcileStale", "DriverAliasRepairsAfterStart",
            "DriverAliasRuntimeNotWatched", "DriverAliasNoHostDriver", "DriverAliasDriverLibraryMismatch",
            "DriverAliasContainerDriverMismatch");
    private static final String RUNBOOK = "https://github.com/driver-alias/driver-alias-agent/blob/main/docs/runbook.md#";

    @Test
    void promtoolAcceptsTheRules() throws Exception {
        Promtool.Result result = Promtool.run(ALERTS, null, "check", "rules", "driver-alias-agent.rules.yaml");

        assertThat(result.succeeded()).as(result.output()).isTrue();
        assertThat(result.output()).contains("SUCCESS: " + ALERT_NAMES.size() + " rules found");
    }

    /** driver-alias-agent.rules.test.yaml makes each alert fire, and shows when it must not. */
    @Test
    void promtoolUnitTestsPass() throws Exception {
        Promtool.Result result = Promtool.run(ALERTS, null, "test", "rules", "driver-alias-agent.rules.test.yaml");

        assertThat(result.succeeded()).as(result.output()).isTrue();
        assertThat(result.output()).contains("SUCCESS");
    }

    @Test
    void everyAlertIsUnitTested() {
        String tests = RepoFiles.read("k8s/alerts/driver-alias-agent.rules.test.yaml");

        assertThat(alerts()).extracting(rule -> rule.get("alert")).containsExactlyElementsOf(ALERT_NAMES);
        for (String name : ALERT_NAMES) {
            assertThat(Pattern.compile("alertname: " + name + "\\s+exp_alerts:\\s+- exp_labels").matcher(tests).find())
                    .as("a test where %s fires", name).isTrue();
            assertThat(Pattern.compile("alertname: " + name + "\\s+exp_alerts: \\[]").matcher(tests).find())
                    .as("a test where %s stays quiet", name).isTrue();
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void everyAlertExplainsItselfAndLinksToItsRunbookEntry() {
        String readme = RepoFiles.read("docs/runbook.md");
        for (Map<String, Object> rule : alerts()) {
            String name = (String) rule.get("alert");
            Map<String, String> annotations = (Map<String, String>) rule.get("annotations");
            assertThat(annotations).as(name).containsOnlyKeys("summary", "description", "runbook_url");
            assertThat(annotations.get("summary")).as(name).isNotBlank();
            assertThat(annotations.get("description")).as(name).isNotBlank();
            assertThat(annotations.get("runbook_url")).as(name).isEqualTo(RUNBOOK + name.toLowerCase(Locale.ROOT));
            // GitHub's anchor for a heading "### DriverAliasAgentDown" is #driveraliasagentdown.
            assertThat(readme).as("docs/runbook.md entry for " + name).containsPattern("(?m)^#{2,4} " + name + "$");
            assertThat((Map<String, String>) rule.get("labels")).as(name).containsKey("severity");
        }
    }

    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> alerts() {
        Map<String, Object> file = (Map<String, Object>) new Load(LoadSettings.builder().build())
                .loadFromString(RepoFiles.read(PromQueries.RULES));
        List<Map<String, Object>> groups = (List<Map<String, Object>>) file.get("groups");
        return groups.stream().flatMap(g -> ((List<Map<String, Object>>) g.get("rules")).stream()).toList();
    }
}
