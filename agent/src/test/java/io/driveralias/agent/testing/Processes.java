package io.driveralias.agent.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs a helper program (gcc, mknod, docker) and fails the test loudly if it fails. */
public final class Processes {

    private Processes() {
    }

    public record Result(int exitCode, String output) {
    }

    public static Result run(List<String> command) {
        return run(command, 120);
    }

    public static Result run(List<String> command, int timeoutSeconds) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            p.getOutputStream().close();
            byte[] out = p.getInputStream().readAllBytes();
            if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError("timed out: " + command);
            }
            return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new AssertionError("cannot run " + command.getFirst() + " (is it installed? .ci/run installs it): " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** Runs and requires exit 0; returns the output. */
    public static String check(List<String> command) {
        Result r = run(command);
        if (r.exitCode() != 0) {
            throw new AssertionError(String.join(" ", command) + " exited " + r.exitCode() + ":\n" + r.output());
        }
        return r.output();
    }

    /** SIGTERM, and SIGKILL if it is still there {@code graceSeconds} later: a daemon the test started. */
    public static void terminate(Process process, int graceSeconds) {
        process.destroy();
        try {
            if (!process.waitFor(graceSeconds, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    public static boolean isRoot() {
        return "root".equals(System.getProperty("user.name"));
    }
}
