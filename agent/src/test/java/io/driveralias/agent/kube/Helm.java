package io.driveralias.agent.kube;

import io.driveralias.agent.testing.RealDriver;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Runs the real {@code helm}: {@code $HELM}, else {@code helm} on the PATH, else the one
 * {@code prepare-fixtures.sh} keeps in the fixture cache (.ci/run sets {@code $HELM} to it). A
 * machine without any fails the test: never skipped.
 */
final class Helm {

    /**
     * The repository's own chart rendered with the repository's own values files, once per
     * command line for the whole run (0.1-0.3 s of helm each, asked for by dozens of tests).
     * Values written by a test into a temporary directory are always rendered afresh.
     */
    private static final Map<List<String>, Result> REPOSITORY_RENDERS = new ConcurrentHashMap<>();

    private Helm() {
    }

    /** What helm printed, and how it exited. */
    record Result(int exitCode, String out, String err) {

        boolean succeeded() {
            return exitCode == 0;
        }
    }

    static String executable() {
        String explicit = System.getenv("HELM");
        if (explicit != null && !explicit.isBlank()) {
            return explicit;
        }
        for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, "helm"))) {
                return "helm";
            }
        }
        Path cached = RealDriver.defaultCache().resolve("kube-tools/bin/helm");
        if (Files.isExecutable(cached)) {
            return cached.toString();
        }
        throw new AssertionError("no helm: set HELM, put helm on the PATH, or run"
                + " agent/src/test/fixtures/prepare-fixtures.sh (or .ci/run), which fetches helm 4.1 into " + cached);
    }

    /**
     * {@code helm template RELEASE CHART --namespace NAMESPACE -f VALUES...}: the YAML stream; fails
     * with helm's own message if it cannot render.
     */
    static String template(Path chart, String release, String namespace, List<Path> values) {
        List<String> args = new ArrayList<>(List.of("template", release, chart.toString(), "--namespace", namespace));
        values.forEach(v -> args.addAll(List.of("--values", v.toString())));
        Result r = repositoryOnly(chart, values) ? REPOSITORY_RENDERS.computeIfAbsent(List.copyOf(args), Helm::run)
                : run(args);
        if (!r.succeeded()) {
            throw new AssertionError("helm " + String.join(" ", args) + " failed (" + r.exitCode() + "):\n" + r.err());
        }
        return r.out();
    }

    private static boolean repositoryOnly(Path chart, List<Path> values) {
        Path root = Manifests.directory().getParent();
        return chart.toAbsolutePath().normalize().startsWith(root)
                && values.stream().allMatch(v -> v.toAbsolutePath().normalize().startsWith(root));
    }

    /**
     * Any helm command, run at the repository's root (where the documentation's relative paths
     * start); the caller looks at the exit code (a refused value is a result, not a failure).
     */
    static Result run(List<String> args) {
        List<String> command = new ArrayList<>();
        command.add(executable());
        command.addAll(args);
        try {
            Path errors = Files.createTempFile("daa-helm-", ".err");
            try {
                Process p = new ProcessBuilder(command).directory(Manifests.directory().getParent().toFile())
                        .redirectError(errors.toFile()).start();
                p.getOutputStream().close();
                String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                if (!p.waitFor(60, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                    throw new AssertionError(String.join(" ", command) + " timed out");
                }
                return new Result(p.exitValue(), out, Files.readString(errors));
            } finally {
                Files.deleteIfExists(errors);
            }
        } catch (IOException e) {
            throw new AssertionError("cannot run " + String.join(" ", command) + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
