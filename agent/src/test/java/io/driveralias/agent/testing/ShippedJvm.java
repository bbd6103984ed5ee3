package io.driveralias.agent.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The agent's JVM as it ships, read from the files that ship it, never copied: the argument
 * file every launch passes ({@code agent/image/jvm.options}, {@code java @FILE}) and the pod's
 * memory limit (which the JVM would otherwise take from the host). A test that measures memory
 * measures what is deployed.
 */
public final class ShippedJvm {

    private ShippedJvm() {
    }

    /** agent/image/jvm.options. */
    public static Path argumentFile() {
        return DaemonSetAgent.k8sDirectory().resolveSibling("agent").resolve("image/jvm.options");
    }

    /** The argument file's options, as the launcher reads it: {@code #} starts a comment, words split on blanks. */
    public static List<String> options() {
        try {
            List<String> options = new ArrayList<>();
            for (String line : Files.readAllLines(argumentFile())) {
                String words = line.replaceFirst("#.*", "").trim();
                if (!words.isEmpty()) {
                    options.addAll(List.of(words.split("\\s+")));
                }
            }
            return options;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** {@code -XX:MaxRAM=} of the pod's memory limit. */
    public static String maxRam() {
        long limit = DaemonSetAgent.load().memoryLimitBytes()
                .orElseThrow(() -> new IllegalStateException("no memory limit in the DaemonSet"));
        return "-XX:MaxRAM=" + limit;
    }

    /** Everything on one command line: the pod's limit, then the argument file. */
    public static List<String> commandLineOptions() {
        return List.of(maxRam(), "@" + argumentFile());
    }
}
