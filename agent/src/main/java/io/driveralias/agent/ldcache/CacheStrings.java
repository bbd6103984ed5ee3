package io.driveralias.agent.ldcache;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/** NUL-terminated strings at offsets from {@code base}, each checked and decoded once. */
final class CacheStrings {
    private final byte[] file;
    private final int base;
    private final Map<Long, String> decoded = new HashMap<>();
    /**
     * Bytes left to scan for terminators. Real caches read each string once (ldconfig
     * shares suffixes, so at most about twice the table); a hostile file pointing a
     * million entries at different long runs would otherwise cost gigabytes of scanning.
     */
    private long scanBudget;

    CacheStrings(byte[] file, int base) {
        this.file = file;
        this.base = base;
        this.scanBudget = 4L * file.length + (1 << 20);
    }

    String at(long offset) throws LdCacheFormatException {
        String known = decoded.get(offset);
        if (known != null) {
            return known;
        }
        long start = base + offset;
        if (start >= file.length) {
            throw new LdCacheFormatException("string offset " + offset + " outside the file");
        }
        int limit = (int) Math.min(file.length, start + LdCacheCodec.MAX_STRING + 1);
        int end = (int) start;
        while (end < limit && file[end] != 0) {
            end++;
        }
        scanBudget -= end - start + 1;
        if (scanBudget < 0) {
            throw new LdCacheFormatException("string table references overlap far more than ldconfig's do");
        }
        if (end < limit) {
            String s = new String(file, (int) start, end - (int) start, StandardCharsets.ISO_8859_1);
            decoded.put(offset, s);
            return s;
        }
        throw new LdCacheFormatException("string at " + offset + " is not terminated within " + LdCacheCodec.MAX_STRING + " bytes");
    }
}
