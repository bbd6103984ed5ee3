package io.driveralias.agent.ldcache;

import io.driveralias.agent.ldcache.CacheHeader.RawEntry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Where one alias goes in a checked cache, found by binary search as the loader searches: the
 * entries with its SONAME in its directory (stale ones, or ones naming another file there),
 * which it replaces, and the index of the entry it goes before, as ldconfig would order it.
 * Entries of other directories stay, and ones that sort equal keep their precedence. Only the
 * run of entries whose key compares equal is read, and only their indices are kept.
 */
record Placement(Alias alias, int flags, byte[] key, byte[] path, long insertAt, long[] replaced, boolean current) {

    /** ldconfig writes one entry per SONAME and directory; a cache with more than this is refused. */
    static final int MAX_REPLACED = 64;

    static Placement find(CacheBytes b, CacheHeader h, Alias alias, int flags) throws LdCacheFormatException, IOException {
        byte[] key = alias.soname().getBytes(StandardCharsets.ISO_8859_1);
        byte[] path = alias.path().getBytes(StandardCharsets.ISO_8859_1);
        byte[] directory = alias.directory().getBytes(StandardCharsets.ISO_8859_1);
        byte[] read = new byte[CacheFormat.MAX_STRING + 1];
        RawEntry e = new RawEntry();
        long lo = 0;
        long hi = h.count;
        while (lo < hi) { // the first entry whose key sorts at or below the new key
            long mid = (lo + hi) >>> 1;
            h.entry(b, mid, e);
            int length = h.string(b, e.key, read);
            if (LoaderOrder.libcmp(read, length, key, key.length) > 0) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        long insertAt = -1;
        long[] replaced = new long[0];
        boolean current = false;
        long i = lo;
        for (; i < h.count; i++) {
            h.entry(b, i, e);
            int length = h.string(b, e.key, read);
            int cmp = LoaderOrder.libcmp(read, length, key, key.length);
            if (cmp < 0 || (cmp > 0 && insertAt >= 0)) {
                break;
            }
            if (cmp > 0) {
                continue; // out of order for a loader whose comparison is not transitive: skipped, as ldconfig would
            }
            boolean sameKey = !CacheFormat.isHwcapsSubdirectoryEntry(e.hwcap) && Arrays.equals(read, 0, length, key, 0, key.length);
            int valueLength = sameKey ? h.string(b, e.value, read) : 0;
            if (sameKey && CacheScanner.inDirectory(read, valueLength, directory)) {
                if (replaced.length == MAX_REPLACED) {
                    throw new LdCacheFormatException("more than " + MAX_REPLACED + " entries for " + alias.soname()
                            + " in " + alias.directory());
                }
                replaced = Arrays.copyOf(replaced, replaced.length + 1);
                replaced[replaced.length - 1] = i;
                current = replaced.length == 1 && e.flags == flags && Arrays.equals(read, 0, valueLength, path, 0, path.length);
            } else if (insertAt < 0 && LoaderOrder.belongsAfter(cmp, e.flags, flags)) {
                insertAt = i;
            }
        }
        return new Placement(alias, flags, key, path, insertAt < 0 ? i : insertAt, replaced, current);
    }

    /** The order of new entries that go before the same old one: keys descending, then flags descending. */
    static int compareNew(Placement a, Placement b) {
        int cmp = Long.compare(a.insertAt, b.insertAt);
        if (cmp != 0) {
            return cmp;
        }
        cmp = LoaderOrder.libcmp(b.key, b.key.length, a.key, a.key.length);
        return cmp != 0 ? cmp : Integer.compare(b.flags, a.flags);
    }
}
