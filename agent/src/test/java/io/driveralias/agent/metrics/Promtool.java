package io.driveralias.agent.metrics;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs Prometheus's {@code promtool}. A machine without it fails the test that needs it,
 * with a message saying how to get it: these checks are never skipped.
 */
public final class Promtool {

    public record Result(int exitCode, String output) {
        public boolean succeeded() {
            return exitCode == 0;
        }
    }

    private Promtool() {
    }

    /** Runs {@code promtool args...} in {@code workDir}, with {@code stdin} (may be null) as its input. */
    public static Result run(Path workDir, String stdin, String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(executable().toString());
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command)
                .directory(workDir.toFile())
                .redirectErrorStream(true)
                .start();
        try (OutputStream in = process.getOutputStream()) {
            if (stdin != null) {
                in.write(stdin.getBytes(StandardCharsets.UTF_8));
            }
        }
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("promtool " + String.join(" ", args) + " did not finish in 60 s");
        }
        return new Result(process.exitValue(), output);
    }

    /** $PROMTOOL, else promtool on the PATH. */
    static Path executable() {
        String explicit = System.getenv("PROMTOOL");
        if (explicit != null && !explicit.isBlank()) {
            return Path.of(explicit);
        }
        for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(File.pathSeparator)) {
            Path candidate = Path.of(dir, "promtool");
            if (Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        throw new AssertionError("promtool is not on the PATH (nor named by $PROMTOOL). It comes with "
                + "Prometheus: on Debian and Ubuntu, apt-get install prometheus (.ci/run does).");
    }
}
