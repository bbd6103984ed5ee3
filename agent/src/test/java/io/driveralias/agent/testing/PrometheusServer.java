package io.driveralias.agent.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * A real Prometheus server ({@code prometheus} from the Debian package, or {@code $PROMETHEUS})
 * with its own configuration and storage in a temp dir, listening on a free loopback port,
 * scraping one static target. Tests query it through its HTTP API, as Grafana and
 * Alertmanager users would. A machine without Prometheus fails the test: never skipped.
 */
public final class PrometheusServer implements AutoCloseable {

    /** One element of an instant vector (or a scalar, with no labels). */
    public record Sample(Map<String, String> labels, double value) {
        public String label(String name) {
            return labels.getOrDefault(name, "");
        }
    }

    /** What to scrape and which rules to evaluate. */
    public record Config(ScrapeJob scrape, Duration interval, List<Path> ruleFiles) {
    }

    /**
     * One scrape job with one static target: its labels (which may be {@code __meta_*} labels
     * standing in for service discovery's) go through {@code relabelConfigs}, written to the
     * configuration as they are (Prometheus' own field names).
     */
    public record ScrapeJob(String jobName, String target, String metricsPath, boolean honorLabels,
                            Map<String, String> targetLabels, List<Map<String, Object>> relabelConfigs,
                            Map<String, Object> connection) {

        /** Without connection settings: plain HTTP, no authentication. */
        public ScrapeJob(String jobName, String target, String metricsPath, boolean honorLabels,
                         Map<String, String> targetLabels, List<Map<String, Object>> relabelConfigs) {
            this(jobName, target, metricsPath, honorLabels, targetLabels, relabelConfigs, Map.of());
        }

        /** A job that needs no relabeling: the job name is the job label. */
        public static ScrapeJob plain(String job, String target, Map<String, String> targetLabels, boolean honorLabels) {
            return new ScrapeJob(job, target, "/metrics", honorLabels, targetLabels, List.of());
        }

        /** The same job with more scrape-config fields, Prometheus' own ({@code scheme}, {@code tls_config}, {@code basic_auth}). */
        public ScrapeJob with(Map<String, Object> fields) {
            Map<String, Object> all = new LinkedHashMap<>(connection);
            all.putAll(fields);
            return new ScrapeJob(jobName, target, metricsPath, honorLabels, targetLabels, relabelConfigs, all);
        }
    }

    private static final ObjectMapper JSON = new ObjectMapper();

    private final Process process;
    private final Path dir;
    private final int port;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    private PrometheusServer(Process process, Path dir, int port) {
        this.process = process;
        this.dir = dir;
        this.port = port;
    }

    /** Writes the configuration, checks it with promtool, starts Prometheus and waits until it is ready. */
    public static PrometheusServer start(Config config) {
        Path dir;
        try {
            dir = Files.createTempDirectory("daa-prometheus-");
            Files.writeString(dir.resolve("prometheus.yml"), yaml(config));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Processes.Result check = Processes.run(List.of(sibling("promtool"), "check", "config",
                dir.resolve("prometheus.yml").toString()), 60);
        if (check.exitCode() != 0) {
            throw new AssertionError("promtool check config failed:\n" + check.output() + "\n" + yaml(config));
        }
        int port = AgentProcess.freePort();
        Process process;
        try {
            process = new ProcessBuilder(executable(),
                    "--config.file=" + dir.resolve("prometheus.yml"),
                    "--storage.tsdb.path=" + dir.resolve("data"),
                    "--storage.tsdb.retention.time=1d",
                    "--web.listen-address=127.0.0.1:" + port,
                    "--log.level=info")
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("prometheus.log").toFile()))
                    .start();
        } catch (IOException e) {
            throw new AssertionError("cannot start " + executable() + " (apt-get install prometheus; .ci/run does): " + e, e);
        }
        PrometheusServer server = new PrometheusServer(process, dir, port);
        try {
            server.awaitReady(Duration.ofSeconds(90));
        } catch (AssertionError e) {
            server.close();
            throw e;
        }
        return server;
    }

    /** $PROMETHEUS, else /usr/bin/prometheus, else prometheus on the PATH. */
    static String executable() {
        String explicit = System.getenv("PROMETHEUS");
        if (explicit != null && !explicit.isBlank()) {
            return explicit;
        }
        return Files.isExecutable(Path.of("/usr/bin/prometheus")) ? "/usr/bin/prometheus" : "prometheus";
    }

    /** promtool next to the prometheus executable, where there is one. */
    private static String sibling(String name) {
        Path exe = Path.of(executable());
        if (exe.getParent() != null && Files.isExecutable(exe.resolveSibling(name))) {
            return exe.resolveSibling(name).toString();
        }
        return name;
    }

    static String yaml(Config c) {
        StringBuilder y = new StringBuilder();
        String interval = c.interval().toMillis() + "ms";
        y.append("global:\n")
                .append("  scrape_interval: ").append(interval).append('\n')
                .append("  scrape_timeout: ").append(interval).append('\n')
                .append("  evaluation_interval: ").append(interval).append('\n');
        if (!c.ruleFiles().isEmpty()) {
            y.append("rule_files:\n");
            for (Path rules : c.ruleFiles()) {
                y.append("  - ").append(quote(rules.toAbsolutePath().toString())).append('\n');
            }
        }
        ScrapeJob job = c.scrape();
        y.append("scrape_configs:\n")
                .append("  - job_name: ").append(quote(job.jobName())).append('\n')
                .append("    honor_labels: ").append(job.honorLabels()).append('\n')
                .append("    metrics_path: ").append(quote(job.metricsPath())).append('\n');
        job.connection().forEach((field, value) -> {
            try {
                y.append("    ").append(field).append(": ").append(JSON.writeValueAsString(value)).append('\n'); // JSON is YAML
            } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                throw new IllegalArgumentException(e);
            }
        });
        y.append("    static_configs:\n")
                .append("      - targets: [").append(quote(job.target())).append("]\n");
        if (!job.targetLabels().isEmpty()) {
            y.append("        labels:\n");
            job.targetLabels().forEach((k, v) -> y.append("          ").append(k).append(": ").append(quote(v)).append('\n'));
        }
        if (!job.relabelConfigs().isEmpty()) {
            // JSON is YAML: each rule as one flow mapping.
            y.append("    relabel_configs:\n");
            for (Map<String, Object> rule : job.relabelConfigs()) {
                try {
                    y.append("      - ").append(JSON.writeValueAsString(rule)).append('\n');
                } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                    throw new IllegalArgumentException(e);
                }
            }
        }
        return y.toString();
    }

    private static String quote(String s) {
        return "'" + s.replace("'", "''") + "'";
    }

    public String url() {
        return "http://127.0.0.1:" + port;
    }

    private void awaitReady(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new AssertionError("prometheus exited (" + process.exitValue() + "):\n" + logTail(40));
            }
            try {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url() + "/-/ready"))
                        .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 200) {
                    return;
                }
            } catch (IOException e) {
                // Not listening yet.
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
            DockerHarness.sleep(200);
        }
        throw new AssertionError("prometheus not ready within " + timeout.toSeconds() + " s:\n" + logTail(40));
    }

    /** GET on the HTTP API; the whole answer ({@code status}, {@code data}, ...). Fails on HTTP or API errors. */
    public JsonNode get(String pathAndQuery) {
        return send(HttpRequest.newBuilder(URI.create(url() + pathAndQuery)).GET(), pathAndQuery);
    }

    /** An instant query, evaluated now; fails if Prometheus reports an error (or a warning). */
    public JsonNode queryData(String expr) {
        String form = "query=" + URLEncoder.encode(expr, StandardCharsets.UTF_8);
        JsonNode answer = send(HttpRequest.newBuilder(URI.create(url() + "/api/v1/query"))
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString(form)), expr);
        if (answer.has("warnings") && !answer.get("warnings").isEmpty()) {
            throw new AssertionError("Prometheus warns about " + expr + ": " + answer.get("warnings"));
        }
        return answer.get("data");
    }

    /** An instant query's result as samples (a scalar is one sample without labels). */
    public List<Sample> query(String expr) {
        JsonNode data = queryData(expr);
        List<Sample> samples = new ArrayList<>();
        switch (data.path("resultType").asText()) {
            case "vector" -> {
                for (JsonNode element : data.path("result")) {
                    Map<String, String> labels = new LinkedHashMap<>();
                    element.path("metric").properties().forEach(f -> labels.put(f.getKey(), f.getValue().asText()));
                    samples.add(new Sample(labels, number(element.path("value").get(1).asText())));
                }
            }
            case "scalar" -> samples.add(new Sample(Map.of(), number(data.path("result").get(1).asText())));
            default -> throw new AssertionError("unexpected result type for " + expr + ": " + data);
        }
        return samples;
    }

    /** The value of a query that must give exactly one sample. */
    public double value(String expr) {
        List<Sample> samples = query(expr);
        if (samples.size() != 1) {
            throw new AssertionError("expected one sample for " + expr + ", got " + samples);
        }
        return samples.getFirst().value();
    }

    /**
     * Polls {@code expr} until {@code condition} holds for its result. On timeout, fails with
     * the last result and {@code diagnostics}.
     */
    public List<Sample> await(String what, String expr, Predicate<List<Sample>> condition, Duration timeout,
                              Supplier<String> diagnostics) {
        long deadline = System.nanoTime() + timeout.toNanos();
        List<Sample> last = List.of();
        while (true) {
            last = query(expr);
            if (condition.test(last)) {
                return last;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + timeout.toSeconds() + " s waiting for " + what
                        + "\n  query: " + expr + "\n  last result: " + last + "\n" + diagnostics.get());
            }
            if (!process.isAlive()) {
                throw new AssertionError("prometheus exited waiting for " + what + ":\n" + logTail(40));
            }
            DockerHarness.sleep(250);
        }
    }

    private JsonNode send(HttpRequest.Builder request, String what) {
        HttpResponse<String> r;
        try {
            r = http.send(request.timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new AssertionError("Prometheus API " + what + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
        JsonNode answer;
        try {
            answer = JSON.readTree(r.body());
        } catch (IOException e) {
            throw new AssertionError("Prometheus API " + what + ": HTTP " + r.statusCode() + ", not JSON: " + r.body());
        }
        if (r.statusCode() != 200 || !"success".equals(answer.path("status").asText())) {
            throw new AssertionError("Prometheus API " + what + ": HTTP " + r.statusCode() + ": "
                    + answer.path("errorType").asText() + ": " + answer.path("error").asText());
        }
        return answer;
    }

    private static double number(String text) {
        return switch (text) {
            case "+Inf" -> Double.POSITIVE_INFINITY;
            case "-Inf" -> Double.NEGATIVE_INFINITY;
            case "NaN" -> Double.NaN;
            default -> Double.parseDouble(text);
        };
    }

    /** Each active target's labels, health, last error: one line each. */
    public String targetsSummary() {
        try {
            StringBuilder out = new StringBuilder();
            for (JsonNode t : get("/api/v1/targets").path("data").path("activeTargets")) {
                out.append(t.path("labels")).append(" health=").append(t.path("health").asText())
                        .append(" lastError=").append(t.path("lastError").asText())
                        .append(" lastScrape=").append(t.path("lastScrape").asText()).append('\n');
            }
            return out.toString();
        } catch (AssertionError e) {
            return "(no targets: " + e.getMessage() + ")";
        }
    }

    public String logTail(int lines) {
        try {
            List<String> all = Files.readAllLines(dir.resolve("prometheus.log"));
            return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
        } catch (IOException e) {
            return "(no prometheus log: " + e + ")";
        }
    }

    public String config() {
        try {
            return Files.readString(dir.resolve("prometheus.yml"));
        } catch (IOException e) {
            return "(no config: " + e + ")";
        }
    }

    /** Stops Prometheus (SIGTERM, then SIGKILL) and deletes its configuration and storage. */
    @Override
    public void close() {
        Processes.terminate(process, 30);
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // Best effort: a temp dir.
        }
        http.close();
    }
}
