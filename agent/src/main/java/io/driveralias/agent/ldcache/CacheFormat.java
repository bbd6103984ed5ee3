package io.driveralias.agent.ldcache;

import java.nio.charset.StandardCharsets;

/**
 * glibc's {@code /etc/ld.so.cache} layouts (sysdeps/generic/dl-cache.h), little-endian only
 * (x86-64, arm64), and the agent's bounds on what it reads and writes.
 */
final class CacheFormat {

    /**
     * The largest cache read, and the largest written. ldconfig's cache for a full distribution
     * is well under 1 MiB; the file is streamed, so this bounds time and disk, not memory.
     */
    static final int MAX_CACHE_BYTES = 16 << 20;
    /** PATH_MAX: ldconfig builds values from real paths. */
    static final int MAX_STRING = 4096;
    static final int MAX_SECTIONS = 64;
    /** glibc knows a handful of glibc-hwcaps subdirectories (x86-64-v2..v4, power10, ...). */
    static final int MAX_HWCAPS = 1024;
    /** More aliases than any driver has; a bound on the work one update can ask for. */
    static final int MAX_ALIASES = 4096;

    static final byte[] OLD_MAGIC = "ld.so-1.7.0".getBytes(StandardCharsets.ISO_8859_1);
    static final byte[] NEW_MAGIC = "glibc-ld.so.cache1.1".getBytes(StandardCharsets.ISO_8859_1);
    static final int OLD_HEADER = 16;
    static final int OLD_ENTRY = 12;
    static final int NEW_HEADER = 48;
    static final int NEW_ENTRY = 24;
    static final int EXTENSION_MAGIC = 0xeaa42174;
    static final int TAG_GENERATOR = 0;
    static final int TAG_HWCAPS = 1;
    static final int ENDIAN_MASK = 3;
    static final int ENDIAN_LITTLE = 2;
    /** glibc's DL_CACHE_HWCAP_EXTENSION: the entry lives in a glibc-hwcaps subdirectory. */
    static final long HWCAP_EXTENSION = 1L << 62;

    private CacheFormat() {
    }

    static boolean isHwcapsSubdirectoryEntry(long hwcap) {
        return ((hwcap >>> 32) & ~0xffL) == (HWCAP_EXTENSION >>> 32);
    }

    static long align(long value, int to) {
        return (value + to - 1) & -to;
    }
}
