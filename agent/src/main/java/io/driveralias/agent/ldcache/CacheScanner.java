package io.driveralias.agent.ldcache;

import io.driveralias.agent.ldcache.CacheHeader.RawEntry;
import java.io.IOException;

/**
 * One pass over a cache's entries in file order, checking what the loader relies on: every
 * string inside the string table and NUL-terminated within MAX_STRING bytes, and the keys in
 * the loader's binary-search order (a cache out of that order would be made worse by an
 * insert). Keys are compared as bytes in three reused buffers: the pass allocates nothing per
 * entry, whatever the count.
 */
final class CacheScanner {

    /** Sees each checked entry; the arrays are reused, valid only during the call. */
    @FunctionalInterface
    interface Visitor {
        void entry(RawEntry e, byte[] key, int keyLength, byte[] value, int valueLength) throws LdCacheFormatException;
    }

    private CacheScanner() {
    }

    static void scan(CacheBytes b, CacheHeader h, Visitor visitor) throws LdCacheFormatException, IOException {
        byte[] previous = new byte[CacheFormat.MAX_STRING + 1];
        byte[] current = new byte[CacheFormat.MAX_STRING + 1];
        byte[] value = new byte[CacheFormat.MAX_STRING + 1];
        int previousLength = 0;
        RawEntry e = new RawEntry();
        for (long i = 0; i < h.count; i++) {
            h.entry(b, i, e);
            int keyLength = h.string(b, e.key, current);
            int valueLength = h.string(b, e.value, value);
            if (i > 0 && LoaderOrder.libcmp(previous, previousLength, current, keyLength) < 0) {
                throw new LdCacheFormatException("entries " + (i - 1) + " and " + i + " are not in the loader's order");
            }
            visitor.entry(e, current, keyLength, value, valueLength);
            byte[] swap = previous;
            previous = current;
            current = swap;
            previousLength = keyLength;
        }
    }

    /** The directory part of a value (everything before its last slash) equals {@code directory}. */
    static boolean inDirectory(byte[] value, int valueLength, byte[] directory) {
        int slash = valueLength - 1;
        while (slash >= 0 && value[slash] != '/') {
            slash--;
        }
        if (slash < 0) {
            return false;
        }
        if (slash == 0) {
            return directory.length == 1 && directory[0] == '/';
        }
        return slash == directory.length && java.util.Arrays.equals(value, 0, slash, directory, 0, slash);
    }
}
