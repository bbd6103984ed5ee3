package io.driveralias.agent.kube;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Renders a kustomization with the real tool: {@code kubectl kustomize} ({@code $KUBECTL}, else
 * {@code kubectl} on the PATH). A machine without it fails the test: never skipped.
 */
final class Kustomize {

    /**
     * The repository's own kustomizations, rendered once per kubectl for the whole test run: the
     * unit tests asked for them about a hundred times (0.3-0.5 s of kubectl each). Copies a test
     * changes live in temporary directories and are always rendered afresh.
     */
    private static final Map<String, Output> REPOSITORY_RENDERS = new ConcurrentHashMap<>();

    private Kustomize() {
    }

    static String executable() {
        String explicit = System.getenv("KUBECTL");
        return explicit != null && !explicit.isBlank() ? explicit : "kubectl";
    }

    /** The rendered YAML stream; fails with kubectl's own message if it cannot render. */
    static String build(Path directory) {
        return run(executable(), directory).yaml();
    }

    /** What one kubectl printed for a kustomization: the YAML, and its warnings (stderr). */
    record Output(String yaml, String warnings) {
    }

    /** Renders {@code directory} with {@code kubectl}; fails with kubectl's own message if it cannot. */
    static Output run(String kubectl, Path directory) {
        Path absolute = directory.toAbsolutePath().normalize();
        if (absolute.startsWith(Manifests.directory())) {
            return REPOSITORY_RENDERS.computeIfAbsent(kubectl + "\0" + absolute, key -> render(kubectl, absolute));
        }
        return render(kubectl, absolute);
    }

    private static Output render(String kubectl, Path directory) {
        try {
            // stderr apart: where kubectl warns (a deprecated field), not in the YAML.
            Path errors = Files.createTempFile("daa-kustomize-", ".err");
            try {
                Process p = new ProcessBuilder(kubectl, "kustomize", directory.toString())
                        .redirectError(errors.toFile()).start();
                p.getOutputStream().close();
                String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                if (!p.waitFor(60, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                    throw new AssertionError("kubectl kustomize " + directory + " timed out");
                }
                if (p.exitValue() != 0) {
                    throw new AssertionError(kubectl + " kustomize " + directory + " failed (" + p.exitValue() + "):\n"
                            + Files.readString(errors));
                }
                return new Output(out, Files.readString(errors));
            } finally {
                Files.deleteIfExists(errors);
            }
        } catch (IOException e) {
            throw new AssertionError("cannot run " + kubectl + " kustomize: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
