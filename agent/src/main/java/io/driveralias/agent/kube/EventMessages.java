package io.driveralias.agent.kube;

import io.driveralias.agent.core.ActionKind;
import io.driveralias.agent.core.DriverLoad;
import io.driveralias.agent.core.DriverLoadText;
import io.driveralias.agent.core.FailureReason;
import io.driveralias.agent.repair.LinkResult;
import io.driveralias.agent.repair.LinkStatus;
import io.driveralias.agent.repair.Problem;
import io.driveralias.agent.repair.RepairReport;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The text of the Events, written for the pod's owner, who did not install the agent: what
 * was done to their container, or why it could not be done and what they can change. At
 * most {@link #MAX_BYTES} bytes (UTF-8), cut at an item boundary with "and N more".
 */
final class EventMessages {

    static final int MAX_BYTES = 1024;

    /** Enough to find the culprit; the rest of the room goes to the other reasons' advice. */
    private static final int PATHS_PER_REASON = 3;

    private EventMessages() {
    }

    /**
     * {@code Repaired NVIDIA driver aliases (driver 535.104.05): created in /usr/lib/x86_64-linux-gnu:
     * libcuda.so.1 -> libcuda.so.535.104.05, ...; replaced in /usr/lib64: x -> y (was: dangling)}.
     */
    static String repaired(RepairReport report) {
        Map<String, List<String>> created = new LinkedHashMap<>();
        Map<String, List<String>> replaced = new LinkedHashMap<>();
        for (LinkResult link : report.applied()) {
            var a = link.action();
            String item = a.name() + " -> " + a.target();
            if (a.kind() == ActionKind.REPLACE) {
                replaced.computeIfAbsent(a.directory(), d -> new ArrayList<>())
                        .add(a.detail().isEmpty() ? item : item + " (was: " + a.detail() + ")");
            } else {
                created.computeIfAbsent(a.directory(), d -> new ArrayList<>()).add(item);
            }
        }
        Bounded text = new Bounded("Repaired NVIDIA driver aliases"
                + report.driverVersion().map(v -> " (driver " + v + ")").orElse("") + ":");
        String separator = " ";
        for (var dir : created.entrySet()) {
            text.section(separator + "created in " + dir.getKey() + ": ", dir.getValue(), Integer.MAX_VALUE);
            separator = "; ";
        }
        for (var dir : replaced.entrySet()) {
            text.section(separator + "replaced in " + dir.getKey() + ": ", dir.getValue(), Integer.MAX_VALUE);
            separator = "; ";
        }
        return text.toString();
    }

    /**
     * {@code NVIDIA driver aliases are missing (driver 535.104.05). read_only: <what to do>
     * (/usr/lib/x86_64-linux-gnu/libcuda.so.1, ...).} One sentence per failure reason.
     */
    static String failed(RepairReport report) {
        Map<FailureReason, List<String>> byReason = new LinkedHashMap<>();
        for (LinkResult link : report.links()) {
            if (link.status() == LinkStatus.FAILED && link.reason() != null) {
                byReason.computeIfAbsent(link.reason(), r -> new ArrayList<>()).add(link.action().path());
            }
        }
        for (Problem p : report.problems()) {
            byReason.computeIfAbsent(p.reason(), r -> new ArrayList<>()).add(p.path());
        }
        Bounded text = new Bounded("NVIDIA driver aliases are missing"
                + report.driverVersion().map(v -> " (driver " + v + ")").orElse("") + ".");
        if (byReason.isEmpty()) {
            text.sentence(" The agent could not repair this container: see the driver-alias-agent log on this node.");
        }
        for (var entry : byReason.entrySet()) {
            text.sentence(" " + entry.getKey().label() + ": " + advice(entry.getKey()));
            List<String> paths = entry.getValue().stream().filter(path -> !path.isBlank()).distinct().toList();
            if (!paths.isEmpty()) {
                text.section(" (", paths, PATHS_PER_REASON);
                text.sentence(")");
            }
            text.sentence(".");
        }
        return text.toString();
    }

    /**
     * {@code The image's own libcuda.so.1 (470.57.02) is loaded instead of the node's driver 535.104.05
     * (/usr/local/lib/libcuda.so.470.57.02, through its /etc/ld.so.cache). CUDA then fails (...): remove ...}
     */
    static String driverLoad(DriverLoad load) {
        String sentence = DriverLoadText.sentence(load);
        String advice = DriverLoadText.advice(load);
        Bounded text = new Bounded(Character.toUpperCase(sentence.charAt(0)) + sentence.substring(1) + ".");
        if (!advice.isEmpty()) {
            text.sentence(" " + Character.toUpperCase(advice.charAt(0)) + advice.substring(1) + ".");
        }
        return text.toString();
    }

    /** What the pod's owner can do about each failure reason. */
    static String advice(FailureReason reason) {
        return switch (reason) {
            case READ_ONLY -> "the container's root filesystem is read-only: mount the driver with its aliases"
                    + " or make the library directory writable";
            case CONFLICT -> "a regular file or directory holds the alias name (often an old driver library"
                    + " copied into the image): remove it from the image so that the node's driver is loaded";
            case UNSAFE_PATH -> "the library path leads out of the container, through /proc or across a mount,"
                    + " so the agent will not write there: make the library directory a plain directory in the image";
            case PERMISSION -> "the agent was denied access: check the capabilities in its DaemonSet and the node's"
                    + " SELinux or AppArmor policy";
            case CONTAINER_GONE -> "the container stopped during the repair: nothing to do unless it keeps happening";
            case DOCKER_ERROR -> "Docker did not answer as expected: see the driver-alias-agent log on this node";
            case RUNTIME_ERROR -> "the container runtime did not answer as expected: see the driver-alias-agent log on this node";
            case IO -> "an I/O error occurred: see the driver-alias-agent log on this node";
            case TOO_LARGE -> "the container's configuration holds more bind mounts, annotations or NVIDIA variables"
                    + " (or longer ones) than the agent reads: see the driver-alias-agent log on this node";
        };
    }

    /** Text that stops growing before {@link #MAX_BYTES}; control characters become '?'. */
    private static final class Bounded {
        /** Room kept for the one final " and 99999 more" or " …". */
        private static final int RESERVE = 16;

        private final StringBuilder text = new StringBuilder();
        private int bytes;
        private boolean full;

        Bounded(String start) {
            sentence(start);
        }

        /** Appends whole, or not at all (and then nothing more is appended). */
        void sentence(String s) {
            if (full) {
                return;
            }
            String clean = clean(s);
            int size = utf8(clean);
            if (bytes + size > MAX_BYTES - RESERVE) {
                full = true;
                text.append(" …");
                return;
            }
            text.append(clean);
            bytes += size;
        }

        /**
         * {@code head} then the items joined by ", ": at most {@code max} of them, then
         * "and N more" for those left out or, when the room runs out, for those that do not fit.
         */
        void section(String head, List<String> items, int max) {
            sentence(head);
            for (int i = 0; i < items.size() && !full; i++) {
                if (i == max) {
                    sentence(" and " + (items.size() - i) + " more");
                    return;
                }
                String item = clean((i == 0 ? "" : ", ") + items.get(i));
                int size = utf8(item);
                if (bytes + size > MAX_BYTES - RESERVE) {
                    full = true;
                    text.append(i == 0 ? "…" : " and " + (items.size() - i) + " more");
                    return;
                }
                text.append(item);
                bytes += size;
            }
        }

        @Override
        public String toString() {
            return text.toString();
        }

        private static int utf8(String s) {
            return s.getBytes(StandardCharsets.UTF_8).length;
        }

        private static String clean(String s) {
            StringBuilder b = new StringBuilder(s.length());
            s.codePoints().forEach(c -> b.appendCodePoint(Character.isISOControl(c) ? '?' : c));
            return b.toString();
        }
    }
}
