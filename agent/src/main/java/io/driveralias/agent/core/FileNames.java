package io.driveralias.agent.core;

import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Name rules shared by the planner, the locator and the ELF reader. Pure functions. */
public final class FileNames {

    /** {@code lib<name>.so.<version>} where the version is dotted numbers, e.g. 535.104.05. */
    private static final Pattern VERSIONED_LIBRARY =
            Pattern.compile("(lib[A-Za-z0-9_+\\-]+(?:\\.[A-Za-z0-9_+\\-]+)*?)\\.so\\.([0-9]+(?:\\.[0-9]+)+)");

    /**
     * NVIDIA's driver versions: a major of three digits and more (304, 470, 535, 1010), then one
     * or two dotted numbers (535.104.05, 550.54). {@code libz.so.1.2.13} and
     * {@code libstdc++.so.6.0.30} carry versions, but not a driver's.
     */
    private static final Pattern DRIVER_VERSION = Pattern.compile("[1-9][0-9]{2,3}\\.[0-9]{1,3}(?:\\.[0-9]{1,3})?");

    /** Longest name a Linux filesystem accepts in one component. */
    public static final int NAME_MAX = 255;

    private FileNames() {
    }

    /**
     * A name that can only ever mean "this entry of this directory": no slash, not empty,
     * not {@code .} or {@code ..}, printable ASCII only. Names from a container (file names,
     * SONAMEs) become link names and link targets, so anything else is refused.
     */
    public static boolean isPlainName(String name) {
        if (name == null || name.isEmpty() || name.length() > NAME_MAX
                || name.equals(".") || name.equals("..")) {
            return false;
        }
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (c <= 0x20 || c >= 0x7f || c == '/') {
                return false;
            }
        }
        return true;
    }

    /**
     * The driver version a file name carries, if it is shaped like a driver library:
     * {@code libnvidia-ml.so.535.104.05 -> 535.104.05}. A single number ({@code libfoo.so.1})
     * is an alias, never a driver file.
     */
    public static Optional<String> versionOf(String fileName) {
        if (!isPlainName(fileName) || !fileName.startsWith("lib")) {
            return Optional.empty();
        }
        // What VERSIONED_LIBRARY matches, without a regex: asked of every file of every library
        // directory and every mount point, it was a tenth of the agent's allocation. The stem is
        // the shortest that works: the first ".so." after which only a version follows.
        for (int so = fileName.indexOf(".so."); so >= 0; so = fileName.indexOf(".so.", so + 1)) {
            if (isStem(fileName, so) && isVersion(fileName, so + 4)) {
                return Optional.of(fileName.substring(so + 4));
            }
        }
        return Optional.empty();
    }

    /** {@code name[0, end)} is {@code lib} and name characters, in dot-separated non-empty parts. */
    private static boolean isStem(String name, int end) {
        if (end <= 3 || name.charAt(3) == '.') {
            return false;
        }
        for (int i = 0; i < end; i++) {
            char c = name.charAt(i);
            if (c == '.' ? i == 0 || name.charAt(i - 1) == '.' || i == end - 1 : !isNameChar(c)) {
                return false;
            }
        }
        return true;
    }

    private static boolean isNameChar(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '+' || c == '-';
    }

    /** {@code name[from, end)} is two or more dot-separated runs of digits. */
    private static boolean isVersion(String name, int from) {
        int runs = 0;
        int run = 0;
        for (int i = from; i < name.length(); i++) {
            char c = name.charAt(i);
            if (c >= '0' && c <= '9') {
                run++;
            } else if (c == '.' && run > 0) {
                runs++;
                run = 0;
            } else {
                return false;
            }
        }
        return run > 0 && runs >= 1;
    }

    /** The rule {@link #versionOf} implements, kept for the test that holds the two together. */
    static Optional<String> versionOfByPattern(String fileName) {
        if (!isPlainName(fileName)) {
            return Optional.empty();
        }
        Matcher m = VERSIONED_LIBRARY.matcher(fileName);
        return m.matches() ? Optional.of(m.group(2)) : Optional.empty();
    }

    /** True if {@code version} has the shape of an NVIDIA driver version (see {@link #DRIVER_VERSION}). */
    public static boolean isDriverVersion(String version) {
        return DRIVER_VERSION.matcher(version).matches();
    }

    /** True if {@code fileName} is {@code lib*.so.<version>} with a version shaped like a driver's. */
    public static boolean hasDriverVersion(String fileName) {
        return versionOf(fileName).map(FileNames::isDriverVersion).orElse(false);
    }

    /** True if {@code fileName} is {@code lib*.so.<version>} for exactly this version. */
    public static boolean isDriverFile(String fileName, String driverVersion) {
        return versionOf(fileName).map(driverVersion::equals).orElse(false);
    }

    /**
     * The library a name belongs to: what comes before its {@code .so}
     * ({@code libnvidia-ml.so.535.104.05} and {@code libnvidia-ml.so.1} are both
     * {@code libnvidia-ml}); empty for a name without {@code .so}.
     */
    public static Optional<String> libraryStem(String name) {
        int so = name.indexOf(".so");
        if (so <= 0 || !(name.length() == so + 3 || name.charAt(so + 3) == '.')) {
            return Optional.empty();
        }
        return Optional.of(name.substring(0, so));
    }

    /** The last component of a slash-separated path. */
    public static String baseName(String path) {
        int slash = path.lastIndexOf('/');
        return slash < 0 ? path : path.substring(slash + 1);
    }

    /** The directory part of a slash-separated absolute path ({@code /} for a top-level name). */
    public static String dirName(String path) {
        int slash = path.lastIndexOf('/');
        if (slash <= 0) {
            return "/";
        }
        return path.substring(0, slash);
    }
}
