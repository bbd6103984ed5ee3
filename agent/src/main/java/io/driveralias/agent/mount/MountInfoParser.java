package io.driveralias.agent.mount;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Parses {@code /proc/<pid>/mountinfo} (proc(5)). The agent reads the file from the host, but
 * the paths in it are chosen by whoever made the container, so every line is treated as
 * hostile: bounded in size, checked field by field, and refused with a
 * {@link MountInfoException} rather than guessed at.
 */
public final class MountInfoParser {

    /** A host with thousands of containers still has mountinfo files far below this. */
    public static final int MAX_BYTES = 4 * 1024 * 1024;
    public static final int MAX_MOUNTS = 100_000;

    /** Mount ID, parent ID, major:minor, root, mount point, mount options. */
    private static final int FIXED_FIELDS = 6;
    /** Filesystem type, mount source, super options. */
    private static final int FIELDS_AFTER_SEPARATOR = 3;
    private static final String SEPARATOR = "-";
    /** Mount and device numbers are printed as unsigned decimals that fit in an int. */
    private static final int MAX_DIGITS = 10;

    private MountInfoParser() {
    }

    /**
     * Reads at most {@link #MAX_BYTES} (one more to detect excess) and parses them. Bytes are
     * decoded as ISO-8859-1 so that every byte of a path survives as one char.
     */
    public static List<MountEntry> parse(InputStream in) throws IOException, MountInfoException {
        byte[] bytes = in.readNBytes(MAX_BYTES + 1);
        if (bytes.length > MAX_BYTES) {
            throw tooLarge();
        }
        return parse(new String(bytes, StandardCharsets.ISO_8859_1));
    }

    /** Parses mountinfo text whose chars are bytes (ISO-8859-1), one mount per line. */
    public static List<MountEntry> parse(String text) throws MountInfoException {
        if (text.length() > MAX_BYTES) {
            throw tooLarge();
        }
        List<MountEntry> mounts = new ArrayList<>();
        int lineNumber = 0;
        int start = 0;
        while (start < text.length()) {
            int end = text.indexOf('\n', start);
            if (end < 0) {
                end = text.length();
            }
            lineNumber++;
            // The kernel never writes an empty line; skipping one loses nothing.
            if (end > start) {
                if (mounts.size() == MAX_MOUNTS) {
                    throw new MountInfoException(lineNumber, "more than " + MAX_MOUNTS + " mounts");
                }
                mounts.add(parseLine(text.substring(start, end), lineNumber));
            }
            start = end + 1;
        }
        return List.copyOf(mounts);
    }

    /**
     * One line of mountinfo (no newline), chars as bytes: for a reader that picked out the one
     * mount it wants without parsing the others.
     */
    public static MountEntry parseLine(String line) throws MountInfoException {
        if (line.length() > MAX_BYTES || line.indexOf('\n') >= 0) {
            throw new MountInfoException(1, "not a single line");
        }
        return parseLine(line, 1);
    }

    private static MountEntry parseLine(String line, int n) throws MountInfoException {
        // The kernel separates fields with exactly one space and escapes every space inside a
        // field, so splitting on single spaces is exact; an empty field stays visible as "".
        String[] f = line.split(" ", -1);
        if (f.length < FIXED_FIELDS + 1 + FIELDS_AFTER_SEPARATOR) {
            throw new MountInfoException(n, "expected at least 10 fields, found " + f.length);
        }
        int separator = indexOfSeparator(f);
        if (separator < 0) {
            throw new MountInfoException(n, "no '-' separator after the mount options");
        }
        int after = f.length - separator - 1;
        if (after != FIELDS_AFTER_SEPARATOR) {
            throw new MountInfoException(n,
                    "expected 3 fields after the '-' separator, found " + after);
        }

        int mountId = number(f[0], "mount ID", n);
        int parentId = number(f[1], "parent ID", n);
        int colon = f[2].indexOf(':');
        if (colon < 0) {
            throw new MountInfoException(n, "device is not major:minor");
        }
        int major = number(f[2].substring(0, colon), "major device number", n);
        int minor = number(f[2].substring(colon + 1), "minor device number", n);

        String root = unescape(nonEmpty(f[3], "root", n));
        String mountPoint = unescape(nonEmpty(f[4], "mount point", n));
        String options = nonEmpty(f[5], "mount options", n);
        List<String> optionalFields = Arrays.asList(f).subList(FIXED_FIELDS, separator);
        for (String field : optionalFields) {
            nonEmpty(field, "optional field", n);
        }
        String fsType = unescape(nonEmpty(f[separator + 1], "filesystem type", n));
        // mount(2) accepts "" as a source, and the kernel then prints an empty field.
        String source = unescape(f[separator + 2]);
        String superOptions = nonEmpty(f[separator + 3], "super options", n);

        return new MountEntry(mountId, parentId, major, minor, root, mountPoint, options,
                optionalFields, fsType, source, superOptions);
    }

    /** The first lone "-" after the fixed fields; optional fields never equal "-". */
    private static int indexOfSeparator(String[] fields) {
        for (int i = FIXED_FIELDS; i < fields.length; i++) {
            if (fields[i].equals(SEPARATOR)) {
                return i;
            }
        }
        return -1;
    }

    /** A non-negative decimal int of ASCII digits only: no sign, no Unicode digits. */
    private static int number(String text, String what, int n) throws MountInfoException {
        if (text.isEmpty()) {
            throw new MountInfoException(n, what + " is not a number");
        }
        // A plain loop: four numbers a line, and a stream for each cost more than the line.
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c < '0' || c > '9') {
                throw new MountInfoException(n, what + " is not a number");
            }
        }
        long value = text.length() > MAX_DIGITS ? Long.MAX_VALUE : Long.parseLong(text);
        if (value > Integer.MAX_VALUE) {
            throw new MountInfoException(n, what + " is out of range");
        }
        return (int) value;
    }

    private static String nonEmpty(String field, String what, int n) throws MountInfoException {
        if (field.isEmpty()) {
            throw new MountInfoException(n, what + " is empty");
        }
        return field;
    }

    /**
     * Undoes the kernel's escaping: a backslash and exactly three octal digits (at most
     * {@code \377}) is that byte. The kernel only writes {@code \040 \011 \012 \134}, but any
     * other backslash sequence is kept as it is rather than refused, so that an unexpected
     * escape cannot make an otherwise sound line unreadable.
     */
    static String unescape(String field) {
        if (field.indexOf('\\') < 0) {
            return field;
        }
        StringBuilder out = new StringBuilder(field.length());
        int i = 0;
        while (i < field.length()) {
            char c = field.charAt(i);
            if (c == '\\' && i + 3 < field.length() && isByteEscape(field, i)) {
                int value = (field.charAt(i + 1) - '0') * 64
                        + (field.charAt(i + 2) - '0') * 8
                        + (field.charAt(i + 3) - '0');
                out.append((char) value);
                i += 4;
            } else {
                out.append(c);
                i++;
            }
        }
        return out.toString();
    }

    private static boolean isByteEscape(String field, int backslash) {
        return isOctal(field.charAt(backslash + 1), '3')
                && isOctal(field.charAt(backslash + 2), '7')
                && isOctal(field.charAt(backslash + 3), '7');
    }

    private static boolean isOctal(char c, char highest) {
        return c >= '0' && c <= highest;
    }

    private static MountInfoException tooLarge() {
        return new MountInfoException("mountinfo larger than " + (MAX_BYTES >> 20) + " MiB");
    }
}
