package io.driveralias.agent.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PromQueriesTest {

    @Test
    void findsEveryQueryOfTheDashboardAndTheRules() {
        List<PromQueries.Query> queries = PromQueries.all();

        assertThat(queries).extracting(PromQueries.Query::origin)
                .contains("alert DriverAliasUnrepairedContainer", "alert DriverAliasAgentDown",
                        "alert DriverAliasRuntimeDisconnected", "alert DriverAliasRepairFailures",
                        "alert DriverAliasReconcileStale", "alert DriverAliasAgentMissing", "dashboard variable node")
                .anyMatch(origin -> origin.startsWith("dashboard panel"));
        assertThat(queries).filteredOn(q -> q.origin().equals("dashboard variable node"))
                .extracting(PromQueries.Query::expr).containsExactly("driver_alias_build_info{job=\"driver-alias-agent\"}");
        assertThat(queries).allSatisfy(q -> assertThat(q.expr()).isNotBlank());
    }

    @Test
    void fillsInGrafanaVariablesAndRefusesUnknownOnes() {
        PromQueries.Query query = new PromQueries.Query("test",
                "rate(x{node=~\"$node\"}[$__rate_interval]) + y{a=~\"${node}\"}[[node]]");

        assertThat(query.evaluable()).isEqualTo("rate(x{node=~\".+\"}[1m]) + y{a=~\".+\"}.+");
        assertThatThrownBy(() -> new PromQueries.Query("panel 9", "x{instance=\"$instance\"}").evaluable())
                .hasMessageContaining("panel 9").hasMessageContaining("$instance");
    }

    /** promtool has no "check this expression"; a rule file with one recording rule per query is the same check. */
    @Test
    void everyQueryIsValidPromQl(@TempDir Path dir) throws Exception {
        List<PromQueries.Query> queries = PromQueries.all();
        String rules = "groups:\n  - name: syntax\n    rules:\n" + IntStream.range(0, queries.size())
                .mapToObj(i -> "      - record: syntax_check_" + i + "\n        expr: |-\n"
                        + queries.get(i).evaluable().lines().map(l -> "          " + l + "\n").collect(Collectors.joining()))
                .collect(Collectors.joining());
        Files.writeString(dir.resolve("queries.yaml"), rules);

        Promtool.Result result = Promtool.run(dir, null, "check", "rules", "queries.yaml");

        String index = IntStream.range(0, queries.size())
                .mapToObj(i -> "syntax_check_" + i + ": " + queries.get(i).origin() + ": " + queries.get(i).evaluable())
                .collect(Collectors.joining("\n"));
        assertThat(result.succeeded()).as("promtool check rules:\n%s\nwhere\n%s", result.output(), index).isTrue();
        assertThat(result.output()).contains("SUCCESS: " + queries.size() + " rules found");
    }
}
