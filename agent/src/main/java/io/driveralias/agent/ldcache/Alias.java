package io.driveralias.agent.ldcache;

import java.util.OptionalInt;

/**
 * A link the agent made, {@code directory/soname}, that the loader cache must list. Without
 * {@code flags} the updater copies them from the directory's other entries or derives them
 * from the driver file's ELF header.
 */
public record Alias(String directory, String soname, OptionalInt flags) {

    public Alias {
        while (directory.length() > 1 && directory.endsWith("/")) {
            directory = directory.substring(0, directory.length() - 1);
        }
        if (!directory.startsWith("/") || !isByteString(directory)) {
            throw new IllegalArgumentException("not an absolute directory: " + directory);
        }
        if (soname.isEmpty() || soname.indexOf('/') >= 0 || !isByteString(soname)
                || soname.equals(".") || soname.equals("..")) {
            throw new IllegalArgumentException("not a file name: " + soname);
        }
    }

    /** Names travel as ISO-8859-1 (one char per byte, as fs/Libc does); NUL ends a C string. */
    private static boolean isByteString(String s) {
        return s.length() <= CacheFormat.MAX_STRING && s.chars().allMatch(c -> c > 0 && c <= 0xff);
    }

    public static Alias of(String directory, String soname) {
        return new Alias(directory, soname, OptionalInt.empty());
    }

    public Alias withFlags(int value) {
        return new Alias(directory, soname, OptionalInt.of(value));
    }

    /** The path the cache entry names: the link itself, as ldconfig records it. */
    public String path() {
        return directory.equals("/") ? "/" + soname : directory + "/" + soname;
    }
}
