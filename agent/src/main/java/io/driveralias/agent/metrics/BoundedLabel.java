package io.driveralias.agent.metrics;

import java.util.HashSet;
import java.util.Set;

/**
 * Keeps a label's values to a fixed number. A value comes from outside (a SONAME a hostile
 * image made up, an action string from Docker); the first {@code limit} distinct acceptable
 * values are kept as they are, everything after them, and anything that does not look like
 * a name, becomes {@value #OTHER}. Prometheus then holds at most {@code limit + 1} series
 * per metric for this label, however many names a container invents.
 */
final class BoundedLabel {

    static final String OTHER = "other";

    /** Longer than any real library or Docker action name. */
    private static final int MAX_LENGTH = 128;

    private final int limit;
    private final Set<String> admitted = new HashSet<>();

    BoundedLabel(int limit) {
        this.limit = limit;
    }

    /** The value to use as the label: {@code value} itself, or {@value #OTHER}. */
    synchronized String admit(String value) {
        if (value == null || !plausible(value)) {
            return OTHER;
        }
        if (admitted.size() < limit) {
            admitted.add(value);
        }
        return admitted.contains(value) ? value : OTHER;
    }

    /** Printable ASCII without spaces, quotes or backslashes, of sane length. */
    private static boolean plausible(String value) {
        if (value.isEmpty() || value.length() > MAX_LENGTH) {
            return false;
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c <= ' ' || c >= 0x7f || c == '"' || c == '\\') {
                return false;
            }
        }
        return true;
    }
}
