package io.driveralias.agent.core;

import java.util.Collection;
import java.util.Iterator;

/**
 * Text from a container made safe for one log line or error message: control and
 * line-breaking characters escaped (a label with a newline cannot forge a second log line),
 * and length capped (65,000 file names cannot make a megabyte line). Pure functions.
 */
public final class Printable {

    /** Enough for any real name, label or path; a hostile one is cut. */
    public static final int MAX_FIELD = 256;
    /** Items of a list shown before "and N more". */
    public static final int MAX_ITEMS = 10;

    private Printable() {
    }

    public static String of(String text) {
        return of(text, MAX_FIELD);
    }

    /** {@code text} escaped, then cut to {@code max} characters with the count of what was cut. */
    public static String of(String text, int max) {
        if (text == null) {
            return "";
        }
        StringBuilder out = new StringBuilder(Math.min(text.length(), max) + 16);
        int i = 0;
        for (; i < text.length() && out.length() < max; i++) {
            escape(text.charAt(i), out);
        }
        if (i < text.length()) {
            out.append("...(").append(text.length() - i).append(" more chars)");
        }
        return out.toString();
    }

    /** "a, b, c and N more": at most {@code maxItems} items, each escaped and capped. */
    public static String list(Collection<String> items, int maxItems) {
        StringBuilder out = new StringBuilder();
        Iterator<String> it = items.iterator();
        int shown = 0;
        while (it.hasNext() && shown < maxItems) {
            if (shown > 0) {
                out.append(", ");
            }
            out.append(of(it.next()));
            shown++;
        }
        if (items.size() > shown) {
            out.append(" and ").append(items.size() - shown).append(" more");
        }
        return out.toString();
    }

    public static String list(Collection<String> items) {
        return list(items, MAX_ITEMS);
    }

    private static void escape(char c, StringBuilder out) {
        switch (c) {
            case '\n' -> out.append("\\n");
            case '\r' -> out.append("\\r");
            case '\t' -> out.append("\\t");
            case '\\' -> out.append("\\\\");
            default -> {
                // C0 and C1 controls, DEL, Unicode line/paragraph separators and the bidi
                // overrides that make a terminal show text other than what was logged.
                if (c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == '\u2028' || c == '\u2029'
                        || (c >= '\u202a' && c <= '\u202e') || (c >= '\u2066' && c <= '\u2069')) {
                    out.append(String.format("\\u%04x", (int) c));
                } else {
                    out.append(c);
                }
            }
        }
    }
}
