package io.driveralias.agent.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.core.FailureReason;
import io.driveralias.agent.core.PodRef;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.snakeyaml.engine.v2.api.Load;
import org.snakeyaml.engine.v2.api.LoadSettings;

/**
 * What docs/monitoring.md and docs/runbook.md say is what ships: the metric table names exactly
 * the agent's series on /metrics, the alert table and the runbook's entries name exactly the
 * alerts of k8s/alerts/*.rules.yaml, and every alert selects the agent's series by its job, as
 * the page says. A metric or an alert added without its documentation fails here.
 */
class MonitoringDocsTest {

    private static final String MONITORING = "docs/monitoring.md";
    private static final String RUNBOOK = "docs/runbook.md";
    private static final String JOB = "job=\"driver-alias-agent\"";
    /** A series the agent exports (its own, the JVM's, the scrape's up), with its label matchers if any. */
    private static final Pattern AGENT_SERIES = Pattern.compile(
            "\\b(driver_alias_\\w+|up|process_\\w+|jvm_\\w+|logback_\\w+)\\b(\\{[^}]*})?");

    private static final ContainerRef CONTAINER = new ContainerRef("3f2a9c1b7d4e" + "0".repeat(52), "k8s_cuda_job-7_ml_uid_0",
            "pytorch:24.01", Optional.of(new PodRef("ml", "job-7", "uid-1", "cuda")));

    @Test
    void theMetricTableNamesExactlyTheSeriesOnMetrics() throws Exception {
        try (MicrometerRepairMetrics metrics = new MicrometerRepairMetrics(new PrometheusMeterRegistry(PrometheusConfig.DEFAULT),
                "1.2.3")) {
            exerciseEveryMetric(metrics);
            ScrapedText scraped = ScrapedText.parse(new String(metrics.scrape(null).body(), StandardCharsets.UTF_8));

            Set<String> documented = DesignMetrics.TYPES.keySet();
            Set<String> served = scraped.types().keySet().stream().filter(n -> n.startsWith("driver_alias_"))
                    // Micrometer's companion gauge of each histogram, described under the table.
                    .filter(n -> !(n.endsWith("_max") && "histogram".equals(DesignMetrics.TYPES.get(n.replaceFirst("_max$", "")))))
                    .collect(Collectors.toCollection(TreeSet::new));

            assertThat(served).as("series on /metrics missing from %s's table", MONITORING)
                    .isSubsetOf(documented);
            assertThat(documented).as("metrics in %s's table that /metrics does not serve", MONITORING)
                    .isSubsetOf(served);
            assertThat(scraped.types()).containsAllEntriesOf(DesignMetrics.TYPES);
        }
    }

    /**
     * Calls every method of {@link RepairMetrics} on the Micrometer adapter, with each constant of
     * an enum parameter, so that a method added there reaches the scrape without this test knowing
     * its name.
     */
    private static void exerciseEveryMetric(RepairMetrics metrics) throws ReflectiveOperationException {
        List<Method> methods = Stream.of(RepairMetrics.class.getMethods())
                .filter(m -> !Modifier.isStatic(m.getModifiers())).toList();
        assertThat(methods).hasSizeGreaterThan(10);
        for (Method method : methods) {
            Class<?>[] types = method.getParameterTypes();
            int variants = 1;
            for (Class<?> type : types) {
                variants = Math.max(variants, type.isEnum() ? type.getEnumConstants().length : 1);
            }
            for (int i = 0; i < variants; i++) {
                Object[] args = new Object[types.length];
                for (int a = 0; a < types.length; a++) {
                    args[a] = argument(method, types[a], a, i);
                }
                try {
                    method.invoke(metrics, args);
                } catch (InvocationTargetException e) {
                    throw new AssertionError(method + " threw", e.getCause());
                }
            }
        }
    }

    private static Object argument(Method method, Class<?> type, int position, int i) {
        if (type.isEnum()) {
            Object[] constants = type.getEnumConstants();
            return constants[i % constants.length];
        }
        if (type == String.class) {
            // A runtime's name where one comes first (runtimeConnected, runtimeEvent): Docker's also
            // feeds the series kept from before other runtimes.
            return method.getName().startsWith("runtime") && position == 0 ? "docker" : "start";
        }
        if (type == int.class || type == Integer.class) {
            return 1;
        }
        if (type == long.class || type == Long.class) {
            return 1L;
        }
        if (type == double.class || type == Double.class) {
            return 1.0;
        }
        if (type == boolean.class || type == Boolean.class) {
            return true;
        }
        if (type == Duration.class) {
            return Duration.ofMillis(12);
        }
        if (type == Instant.class) {
            return Instant.now();
        }
        if (type == ContainerRef.class) {
            return CONTAINER;
        }
        if (type == java.util.function.IntSupplier.class) {
            return (java.util.function.IntSupplier) () -> 1;
        }
        if (type == java.util.function.LongSupplier.class) {
            return (java.util.function.LongSupplier) () -> 1L;
        }
        if (type == io.driveralias.agent.core.HostDriverState.class) {
            return io.driveralias.agent.core.HostDriverState.of(Optional.of("535.104.05"), List.of("535.183.01"));
        }
        if (type == io.driveralias.agent.core.DriverLoad.class) {
            return io.driveralias.agent.testing.DriverLoads.imageCopy();
        }
        if (type == Collection.class || type == List.class) {
            return List.of(FailureReason.CONFLICT);
        }
        throw new AssertionError("MonitoringDocsTest cannot call " + method + " yet: teach argument() a "
                + type.getSimpleName());
    }

    @Test
    void theAlertTableAndTheRunbookNameExactlyTheShippedAlerts() throws IOException {
        Set<String> shipped = new TreeSet<>(alerts().keySet());
        Set<String> table = new TreeSet<>(matches(RepoFiles.read(MONITORING), "(?m)^\\| `(DriverAlias\\w+)` \\|"));
        Set<String> runbook = new TreeSet<>(matches(RepoFiles.read(RUNBOOK), "(?m)^#{2,4} (DriverAlias\\w+)\\s*$"));

        assertThat(shipped).isNotEmpty();
        assertThat(table).as("alerts in %s's table", MONITORING).isEqualTo(shipped);
        assertThat(runbook).as("alert entries in %s", RUNBOOK).isEqualTo(shipped);
    }

    /** docs/monitoring.md: every alert selects job="driver-alias-agent"; kube-state-metrics' series aside. */
    @Test
    void everyAlertSelectsTheAgentsSeriesByItsJob() throws IOException {
        for (Map.Entry<String, String> alert : alerts().entrySet()) {
            Matcher m = AGENT_SERIES.matcher(alert.getValue());
            int selectors = 0;
            while (m.find()) {
                selectors++;
                assertThat(m.group(2)).as("%s: %s", alert.getKey(), m.group()).isNotNull().contains(JOB);
            }
            assertThat(selectors).as(alert.getKey()).isPositive();
        }
        assertThat(RepoFiles.read(MONITORING)).contains("every alert and dashboard query selects");
    }

    /** The check above, on expressions it must refuse. */
    @Test
    void theJobCheckSeesAMissingSelector() {
        for (String expr : List.of("driver_alias_docker_up == 0", "up{job=\"other\"} == 0",
                "increase(driver_alias_repair_failures_total{reason=\"io\"}[10m]) > 0")) {
            Matcher m = AGENT_SERIES.matcher(expr);
            assertThat(m.find()).isTrue();
            assertThat(m.group(2) != null && m.group(2).contains(JOB)).as(expr).isFalse();
        }
    }

    /** Alert name to expression, from every rule file in k8s/alerts (the tests' files aside). */
    @SuppressWarnings("unchecked")
    static Map<String, String> alerts() throws IOException {
        Map<String, String> alerts = new java.util.LinkedHashMap<>();
        List<Path> files;
        try (Stream<Path> list = Files.list(RepoFiles.path("k8s/alerts"))) {
            files = list.filter(f -> f.toString().endsWith(".rules.yaml")).sorted().toList();
        }
        for (Path file : files) {
            Map<String, Object> doc = (Map<String, Object>) new Load(LoadSettings.builder().build())
                    .loadFromString(Files.readString(file));
            for (Map<String, Object> group : (List<Map<String, Object>>) doc.get("groups")) {
                for (Map<String, Object> rule : (List<Map<String, Object>>) group.get("rules")) {
                    if (rule.containsKey("alert")) {
                        assertThat(alerts.put((String) rule.get("alert"), (String) rule.get("expr")))
                                .as("alert %s defined twice", rule.get("alert")).isNull();
                    }
                }
            }
        }
        return alerts;
    }

    private static List<String> matches(String text, String regex) {
        List<String> found = new ArrayList<>();
        Matcher m = Pattern.compile(regex).matcher(text);
        while (m.find()) {
            found.add(m.group(1));
        }
        return found;
    }
}
