package io.driveralias.agent.testing;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The agent's JVM as the DaemonSet runs it, read from the files that ship it, never copied:
 * the flags of the image's ENTRYPOINT (agent/Dockerfile) before {@code -jar}, the pod's memory
 * limit (which the JVM would otherwise take from the host), and the DaemonSet's
 * JAVA_TOOL_OPTIONS (k8s/base/040-daemonset.yaml). A test that measures memory measures what
 * is deployed.
 */
public final class ShippedJvm {

    private ShippedJvm() {
    }

    /** The ENTRYPOINT's flags to java: {@code -XX:+UseSerialGC -XX:+ExitOnOutOfMemoryError}, today. */
    public static List<String> entrypointFlags() {
        Path dockerfile = DaemonSetAgent.k8sDirectory().resolveSibling("agent").resolve("Dockerfile");
        try {
            Matcher m = Pattern.compile("(?m)^ENTRYPOINT (\\[.*])$").matcher(Files.readString(dockerfile));
            if (!m.find()) {
                throw new IllegalStateException("no ENTRYPOINT in " + dockerfile);
            }
            List<String> entrypoint = new ObjectMapper().readValue(m.group(1), new TypeReference<List<String>>() {
            });
            int jar = entrypoint.indexOf("-jar");
            if (jar < 1 || !entrypoint.getFirst().endsWith("/java")) {
                throw new IllegalStateException("the ENTRYPOINT of " + dockerfile + " does not run java -jar: " + entrypoint);
            }
            return List.copyOf(entrypoint.subList(1, jar));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The DaemonSet's JAVA_TOOL_OPTIONS, to be passed in the environment as the pod does. */
    public static String toolOptions() {
        return DaemonSetAgent.load().environmentValue("JAVA_TOOL_OPTIONS")
                .orElseThrow(() -> new IllegalStateException("no JAVA_TOOL_OPTIONS in the DaemonSet"));
    }

    /** {@code -XX:MaxRAM=} of the pod's memory limit. */
    public static String maxRam() {
        long limit = DaemonSetAgent.load().memoryLimitBytes()
                .orElseThrow(() -> new IllegalStateException("no memory limit in the DaemonSet"));
        return "-XX:MaxRAM=" + limit;
    }

    /** Everything on one command line (JAVA_TOOL_OPTIONS last, where the JVM would apply it). */
    public static List<String> commandLineOptions() {
        List<String> options = new ArrayList<>(entrypointFlags());
        options.add(maxRam());
        options.addAll(List.of(toolOptions().trim().split("\\s+")));
        return options;
    }
}
