package io.driveralias.agent.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

/**
 * A loaded node: a busy loop on every core, for as long as it is open. {@code nice} 0 (the
 * default) competes with dockerd and the agent as a training job's data loaders would; a
 * positive value leaves them the CPU first.
 */
public final class CpuHog implements AutoCloseable {

    private final List<Process> loops = new ArrayList<>();

    public CpuHog(int nice) {
        int cores = Runtime.getRuntime().availableProcessors();
        try {
            for (int i = 0; i < cores; i++) {
                loops.add(new ProcessBuilder("nice", "-n", String.valueOf(nice), "sh", "-c", "while :; do :; done")
                        .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start());
            }
        } catch (IOException e) {
            close();
            throw new UncheckedIOException(e);
        }
    }

    public static String describe(int nice) {
        return "a busy loop on each of " + Runtime.getRuntime().availableProcessors() + " cores, "
                + (nice == 0 ? "not niced" : "nice " + nice);
    }

    @Override
    public void close() {
        for (Process p : loops) {
            p.destroyForcibly();
        }
        for (Process p : loops) {
            try {
                p.waitFor();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
