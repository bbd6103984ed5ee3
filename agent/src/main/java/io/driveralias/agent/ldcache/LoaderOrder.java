package io.driveralias.agent.ldcache;

/**
 * The order the loader binary-searches in: glibc's {@code _dl_cache_libcmp}, where runs of
 * digits compare as numbers ("libfoo.so.10" after "libfoo.so.9"), applied descending. The
 * comparison mirrors the C code exactly, including int wrap-around on absurdly long digit
 * runs and the signedness of {@code char} (signed on x86, unsigned on arm64), because a
 * cache that is sorted differently from the loader's idea of sorted loses lookups.
 */
final class LoaderOrder {

    private static final boolean SIGNED_CHAR = switch (System.getProperty("os.arch")) {
        case "amd64", "x86_64", "x86", "i386", "i686" -> true;
        default -> false;
    };

    private LoaderOrder() {
    }

    /** {@code _dl_cache_libcmp(a, b)}: negative, zero or positive. */
    static int libcmp(String a, String b) {
        int i = 0;
        int j = 0;
        while (i < a.length()) {
            int c1 = at(a, i);
            int c2 = at(b, j);
            if (isDigit(c1)) {
                if (!isDigit(c2)) {
                    return 1;
                }
                int v1 = 0;
                while (i < a.length() && isDigit(at(a, i))) {
                    v1 = v1 * 10 + at(a, i++) - '0';
                }
                int v2 = 0;
                while (j < b.length() && isDigit(at(b, j))) {
                    v2 = v2 * 10 + at(b, j++) - '0';
                }
                if (v1 != v2) {
                    return v1 - v2;
                }
            } else if (isDigit(c2)) {
                return -1;
            } else if (c1 != c2) {
                return c1 - c2;
            } else {
                i++;
                j++;
            }
        }
        return 0 - at(b, j);
    }

    /**
     * Whether ldconfig would put {@code existing} after a new plain entry ({@code hwcap} and
     * {@code osversion} 0) with {@code key} and {@code flags}: a smaller key, or the same key
     * with smaller flags. Entries that compare equal stay first, as ldconfig keeps them.
     */
    static boolean belongsAfter(CacheEntry existing, String key, int flags) {
        int cmp = libcmp(existing.key(), key);
        return cmp < 0 || (cmp == 0 && existing.flags() < flags);
    }

    private static int at(String s, int index) {
        if (index >= s.length()) {
            return 0;
        }
        int c = s.charAt(index) & 0xff;
        return SIGNED_CHAR && c >= 0x80 ? c - 0x100 : c;
    }

    private static boolean isDigit(int c) {
        return c >= '0' && c <= '9';
    }
}
