package io.driveralias.agent.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** Runs a helper program (gcc, mknod, docker) and fails the test loudly if it fails. */
public final class Processes {

    private Processes() {
    }

    public record Result(int exitCode, String output) {
    }

    public static Result run(List<String> command) {
        return run(command, 120);
    }

    /**
     * Runs {@code command} for at most {@code timeoutSeconds}. Its output is read on a thread of its
     * own: read on this one, a program that never ends (a deadlocked dockerd's client) held the test,
     * and CI with it, past every timeout.
     */
    public static Result run(List<String> command, int timeoutSeconds) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            p.getOutputStream().close();
            CompletableFuture<byte[]> out = CompletableFuture.supplyAsync(() -> {
                try {
                    return p.getInputStream().readAllBytes();
                } catch (IOException e) {
                    return ("(output not read: " + e + ")").getBytes(StandardCharsets.UTF_8);
                }
            }, runnable -> Thread.ofPlatform().daemon().name("process-output").start(runnable));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
            if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError("timed out after " + timeoutSeconds + " s: " + command);
            }
            // A child it left running may hold the output open a while: within the same time, and 10 s at least.
            long left = Math.max(TimeUnit.SECONDS.toNanos(10), deadline - System.nanoTime());
            return new Result(p.exitValue(), new String(out.get(left, TimeUnit.NANOSECONDS), StandardCharsets.UTF_8));
        } catch (ExecutionException | TimeoutException e) {
            throw new AssertionError("the output of " + command.getFirst() + " was not read: " + e, e);
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
