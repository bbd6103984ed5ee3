package io.driveralias.agent.ldcache;

import java.nio.charset.StandardCharsets;

/**
 * The order the loader binary-searches in: glibc's {@code _dl_cache_libcmp}, where runs of
 * digits compare as numbers ("libfoo.so.10" after "libfoo.so.9"), applied descending. The
 * comparison mirrors the C code exactly, including int wrap-around on absurdly long digit
 * runs and the signedness of {@code char} (signed on x86, unsigned on arm64), because a
 * cache that is sorted differently from the loader's idea of sorted loses lookups. It works
 * on the bytes as stored: a scan of a large cache builds no String per entry.
 */
final class LoaderOrder {

    private static final boolean SIGNED_CHAR = switch (System.getProperty("os.arch")) {
        case "amd64", "x86_64", "x86", "i386", "i686" -> true;
        default -> false;
    };

    private LoaderOrder() {
    }

    /** {@code _dl_cache_libcmp(a, b)} over {@code a[0..aLength)} and {@code b[0..bLength)}. */
    static int libcmp(byte[] a, int aLength, byte[] b, int bLength) {
        int i = 0;
        int j = 0;
        while (i < aLength) {
            int c1 = at(a, aLength, i);
            int c2 = at(b, bLength, j);
            if (isDigit(c1)) {
                if (!isDigit(c2)) {
                    return 1;
                }
                int v1 = 0;
                while (i < aLength && isDigit(at(a, aLength, i))) {
                    v1 = v1 * 10 + at(a, aLength, i++) - '0';
                }
                int v2 = 0;
                while (j < bLength && isDigit(at(b, bLength, j))) {
                    v2 = v2 * 10 + at(b, bLength, j++) - '0';
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
        return 0 - at(b, bLength, j);
    }

    static int libcmp(String a, String b) {
        byte[] x = a.getBytes(StandardCharsets.ISO_8859_1);
        byte[] y = b.getBytes(StandardCharsets.ISO_8859_1);
        return libcmp(x, x.length, y, y.length);
    }

    /**
     * Whether ldconfig would put an existing entry after a new plain one ({@code hwcap} and
     * {@code osversion} 0), given {@code cmp} = libcmp(existing key, new key): a smaller key,
     * or the same key with smaller flags. Entries that compare equal stay first, as ldconfig
     * keeps them.
     */
    static boolean belongsAfter(int cmp, int existingFlags, int flags) {
        return cmp < 0 || (cmp == 0 && existingFlags < flags);
    }

    private static int at(byte[] s, int length, int index) {
        if (index >= length) {
            return 0;
        }
        int c = s[index] & 0xff;
        return SIGNED_CHAR && c >= 0x80 ? c - 0x100 : c;
    }

    private static boolean isDigit(int c) {
        return c >= '0' && c <= '9';
    }
}
