package io.driveralias.agent.core;

/**
 * The Docker API versions this agent speaks: from 1.24 (Docker 1.12) to {@link #NEWEST_KNOWN}.
 * With the daemon, the older of its version and ours is agreed.
 */
public final class DockerApiVersions {

    public static final String NEWEST_KNOWN = "1.43";
    public static final String OLDEST_SUPPORTED = "1.24";

    private DockerApiVersions() {
    }

    /** Whether this agent can speak Docker API {@code version} ("1.24" .. {@link #NEWEST_KNOWN}). */
    public static boolean isSupported(String version) {
        return isVersion(version) && compare(version, OLDEST_SUPPORTED) >= 0 && compare(version, NEWEST_KNOWN) <= 0;
    }

    public static boolean isVersion(String text) {
        return text.matches("[0-9]{1,3}\\.[0-9]{1,3}");
    }

    /** The version to speak with a daemon that speaks up to {@code daemon}: ours or its, the older. */
    public static String agreed(String daemon) {
        return compare(daemon, NEWEST_KNOWN) < 0 ? daemon : NEWEST_KNOWN;
    }

    /** Compares "major.minor" versions numerically; both must pass {@link #isVersion}. */
    public static int compare(String a, String b) {
        String[] x = a.split("\\.");
        String[] y = b.split("\\.");
        for (int i = 0; i < 2; i++) {
            int c = Integer.compare(Integer.parseInt(x[i]), Integer.parseInt(y[i]));
            if (c != 0) {
                return c;
            }
        }
        return 0;
    }
}
