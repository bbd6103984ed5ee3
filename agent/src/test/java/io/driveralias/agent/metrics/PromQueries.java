package io.driveralias.agent.metrics;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.snakeyaml.engine.v2.api.Load;
import org.snakeyaml.engine.v2.api.LoadSettings;

/**
 * Every PromQL expression the project ships: the dashboard's panel queries and variable
 * queries, and the alert rules. Tests check their syntax with promtool; an end-to-end test
 * can evaluate {@link Query#evaluable()} against a Prometheus that scraped a real agent.
 */
public final class PromQueries {

    public static final String DASHBOARD = "grafana/driver-alias-agent.json";
    public static final String RULES = "k8s/alerts/driver-alias-agent.rules.yaml";

    /**
     * Values for the Grafana variables the dashboard uses, as Grafana would fill them in
     * (all nodes selected). A variable missing here makes {@link Query#evaluable()} fail.
     */
    public static final Map<String, String> GRAFANA_DEFAULTS = Map.of(
            "node", ".+",
            "__rate_interval", "1m",
            "__interval", "1m",
            "__range", "1h");

    private static final Pattern VARIABLE = Pattern.compile("\\$\\{(\\w+)(?::\\w+)?}|\\[\\[(\\w+)]]|\\$(\\w+)");
    private static final Pattern LABEL_VALUES = Pattern.compile("label_values\\((.+),\\s*\\w+\\)");

    /** An expression and where it comes from ("dashboard panel 3 'Title' A", "alert DriverAliasAgentDown"). */
    public record Query(String origin, String expr) {

        /** The expression with Grafana's variables filled in by {@link #GRAFANA_DEFAULTS}. */
        public String evaluable() {
            return evaluable(GRAFANA_DEFAULTS);
        }

        public String evaluable(Map<String, String> values) {
            Matcher m = VARIABLE.matcher(expr);
            StringBuilder out = new StringBuilder();
            while (m.find()) {
                String name = m.group(1) != null ? m.group(1) : m.group(2) != null ? m.group(2) : m.group(3);
                String value = values.get(name);
                if (value == null) {
                    throw new IllegalArgumentException(origin + " uses $" + name + ", which has no value");
                }
                m.appendReplacement(out, Matcher.quoteReplacement(value));
            }
            m.appendTail(out);
            return out.toString();
        }
    }

    private PromQueries() {
    }

    /** The dashboard's and the alert rules' expressions. */
    public static List<Query> all() {
        List<Query> all = new ArrayList<>(dashboard(RepoFiles.read(DASHBOARD)));
        all.addAll(rules(RepoFiles.read(RULES)));
        return all;
    }

    /**
     * Each target's {@code expr} of each panel (rows' nested panels included), and each query
     * variable's query; {@code label_values(selector, label)} yields its selector.
     */
    public static List<Query> dashboard(String json) {
        JsonNode root;
        try {
            root = new ObjectMapper().readTree(json);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        List<Query> queries = new ArrayList<>();
        addPanels(root.path("panels"), queries);
        for (JsonNode variable : root.path("templating").path("list")) {
            if (!variable.path("type").asText().equals("query")) {
                continue;
            }
            JsonNode query = variable.path("query");
            String text = query.isObject() ? query.path("query").asText() : query.asText();
            Matcher labelValues = LABEL_VALUES.matcher(text.trim());
            queries.add(new Query("dashboard variable " + variable.path("name").asText(),
                    labelValues.matches() ? labelValues.group(1).trim() : text));
        }
        return queries;
    }

    private static void addPanels(JsonNode panels, List<Query> queries) {
        for (JsonNode panel : panels) {
            for (JsonNode target : panel.path("targets")) {
                if (target.hasNonNull("expr")) {
                    queries.add(new Query("dashboard panel %d '%s' %s".formatted(
                            panel.path("id").asInt(), panel.path("title").asText(), target.path("refId").asText()),
                            target.path("expr").asText()));
                }
            }
            addPanels(panel.path("panels"), queries);
        }
    }

    /** Each rule's {@code expr} in a Prometheus rule file. */
    @SuppressWarnings("unchecked")
    public static List<Query> rules(String yaml) {
        Map<String, Object> file = (Map<String, Object>) new Load(LoadSettings.builder().build()).loadFromString(yaml);
        List<Query> queries = new ArrayList<>();
        for (Map<String, Object> group : (List<Map<String, Object>>) file.get("groups")) {
            for (Map<String, Object> rule : (List<Map<String, Object>>) group.get("rules")) {
                String name = rule.containsKey("alert") ? "alert " + rule.get("alert") : "record " + rule.get("record");
                queries.add(new Query(name, (String) rule.get("expr")));
            }
        }
        return queries;
    }
}
