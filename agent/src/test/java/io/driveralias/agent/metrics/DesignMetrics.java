package io.driveralias.agent.metrics;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The metrics docs/monitoring.md promises, read from its table, with their {@code # TYPE} as the
 * Prometheus text format declares them. MonitoringDocsTest keeps the table equal to what the agent
 * serves; the scrape tests check each name's type against it.
 */
public final class DesignMetrics {

    public static final String DOC = "docs/monitoring.md";

    private static final Pattern ROW = Pattern.compile("(?m)^\\| `(driver_alias_[a-z0-9_]+)` \\| (counter|gauge|histogram) \\|");

    public static final Map<String, String> TYPES = Collections.unmodifiableMap(parse(RepoFiles.read(DOC)));

    private DesignMetrics() {
    }

    /** Each {@code | `name` | type |} row of the page's tables, in order. */
    static Map<String, String> parse(String markdown) {
        Map<String, String> types = new LinkedHashMap<>();
        Matcher m = ROW.matcher(markdown);
        while (m.find()) {
            if (types.put(m.group(1), m.group(2)) != null) {
                throw new IllegalStateException(DOC + " lists " + m.group(1) + " twice");
            }
        }
        if (types.isEmpty()) {
            throw new IllegalStateException("no metrics table in " + DOC);
        }
        return types;
    }
}
