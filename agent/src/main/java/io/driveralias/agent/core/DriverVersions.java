package io.driveralias.agent.core;

import java.util.Collection;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Picks the driver version from the names of versioned files. The anchors are the two
 * libraries every NVIDIA driver install carries; without them, the version shared by the most
 * {@code libnvidia-*} files wins. Among equals the newest wins, so that a stale copy of an old
 * driver left in an image never outvotes the injected one.
 */
public final class DriverVersions {

    private static final String[] ANCHORS = {"libnvidia-ml.so.", "libcuda.so."};

    private DriverVersions() {
    }

    public static Optional<String> detect(Collection<String> fileNames) {
        Map<String, Integer> anchorVotes = new TreeMap<>();
        Map<String, Integer> nvidiaVotes = new TreeMap<>();
        for (String name : fileNames) {
            Optional<String> version = FileNames.versionOf(name);
            if (version.isEmpty()) {
                continue;
            }
            for (String anchor : ANCHORS) {
                if (name.equals(anchor + version.get())) {
                    anchorVotes.merge(version.get(), 1, Integer::sum);
                }
            }
            if (name.startsWith("libnvidia-") || name.startsWith("libcuda")) {
                nvidiaVotes.merge(version.get(), 1, Integer::sum);
            }
        }
        Map<String, Integer> votes = anchorVotes.isEmpty() ? nvidiaVotes : anchorVotes;
        return votes.entrySet().stream()
                .max(Map.Entry.<String, Integer>comparingByValue()
                        .thenComparing(Map.Entry::getKey, DriverVersions::compareVersions))
                .map(Map.Entry::getKey);
    }

    /**
     * The versions of the driver's files on a host.
     *
     * @param accepted  the versions whose files count as the host's driver
     * @param userSpace every version of user-space driver the host has, whatever is accepted
     */
    public record HostVersions(Set<String> accepted, Set<String> userSpace) {

        public HostVersions {
            accepted = Set.copyOf(accepted);
            userSpace = Set.copyOf(userSpace);
        }
    }

    /**
     * Which of a host's versioned file names are its driver: the configured version only
     * ({@code --driver-version}); else the loaded kernel module's, where the host has its files;
     * else every version an anchor ({@code libcuda}, {@code libnvidia-ml}) carries, as a node may
     * hold two drivers side by side for a while (or a driver upgraded without reloading the module,
     * whose files are then the host's all the same); else the version most {@code libnvidia-*}
     * files share.
     */
    public static HostVersions onHost(Collection<String> fileNames, Optional<String> configured, Optional<String> module) {
        Set<String> anchored = new HashSet<>();
        for (String name : fileNames) {
            FileNames.versionOf(name).filter(v -> name.equals(ANCHORS[0] + v) || name.equals(ANCHORS[1] + v))
                    .ifPresent(anchored::add);
        }
        Set<String> userSpace = anchored.isEmpty() ? detect(fileNames).map(Set::of).orElse(Set.of()) : anchored;
        if (configured.isPresent()) {
            return new HostVersions(Set.of(configured.get()), userSpace);
        }
        if (module.isPresent() && userSpace.contains(module.get())) {
            return new HostVersions(Set.of(module.get()), userSpace);
        }
        return new HostVersions(userSpace, userSpace);
    }

    /** Numeric, component by component: 535.104.05 > 535.54.03 > 470.199.02. */
    public static int compareVersions(String a, String b) {
        String[] x = a.split("\\.");
        String[] y = b.split("\\.");
        for (int i = 0; i < Math.max(x.length, y.length); i++) {
            long xi = i < x.length ? parse(x[i]) : -1;
            long yi = i < y.length ? parse(y[i]) : -1;
            if (xi != yi) {
                return Long.compare(xi, yi);
            }
        }
        return 0;
    }

    private static final Pattern NVRM = Pattern.compile("NVRM version:.*?\\s(\\d+\\.\\d+(?:\\.\\d+)?)(?:\\s|$)");

    /**
     * The kernel module's version from {@code /proc/driver/nvidia/version}, e.g. "NVRM version:
     * NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 ..." (also the open modules' form).
     */
    public static Optional<String> fromProcVersion(String text) {
        Matcher m = NVRM.matcher(text);
        return m.find() ? Optional.of(m.group(1)) : Optional.empty();
    }

    private static long parse(String part) {
        try {
            return part.length() > 9 ? Long.MAX_VALUE : Long.parseLong(part);
        } catch (NumberFormatException e) {
            return -1;
        }
    }
}
