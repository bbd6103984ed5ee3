package io.driveralias.agent.ldcache;

import io.driveralias.agent.elf.ByteSource;
import java.io.IOException;
import java.util.Arrays;

/**
 * Positioned reads of an untrusted cache through a few small pages: never the whole file in
 * memory, and never a mapping (a container can truncate its file while it is mapped, and the
 * JVM would die of SIGBUS). Reads past the size the file had when opened fail with an
 * IOException (the file shrank); everything the cache claims is checked by the callers first.
 */
final class CacheBytes {

    private static final int PAGE = 4096;
    private static final int PAGES = 8;

    private final ByteSource file;
    private final long size;
    private final byte[][] pages = new byte[PAGES][];
    private final long[] pageIndex = new long[PAGES];
    private final long[] lastUse = new long[PAGES];
    private long clock;
    /**
     * Bytes left to scan for string terminators. Real caches read each string about twice
     * (ldconfig shares suffixes); a hostile file pointing a million entries at different long
     * runs would otherwise cost gigabytes of scanning.
     */
    private long scanBudget;

    CacheBytes(ByteSource file) {
        this.file = file;
        this.size = file.size();
        this.scanBudget = 4 * size + (1 << 20);
        Arrays.fill(pageIndex, -1);
    }

    long size() {
        return size;
    }

    ByteSource source() {
        return file;
    }

    int u8(long at) throws IOException {
        byte[] page = page(at / PAGE);
        return page[(int) (at % PAGE)] & 0xff;
    }

    int i32(long at) throws IOException {
        int within = (int) (at % PAGE);
        if (within <= PAGE - 4) {
            byte[] p = page(at / PAGE);
            return (p[within] & 0xff) | (p[within + 1] & 0xff) << 8 | (p[within + 2] & 0xff) << 16 | (p[within + 3] & 0xff) << 24;
        }
        return u8(at) | u8(at + 1) << 8 | u8(at + 2) << 16 | u8(at + 3) << 24;
    }

    long u32(long at) throws IOException {
        return Integer.toUnsignedLong(i32(at));
    }

    long i64(long at) throws IOException {
        return u32(at) | (long) i32(at + 4) << 32;
    }

    boolean hasBytes(long at, byte[] expected) throws IOException {
        if (at < 0 || at > size - expected.length) {
            return false;
        }
        for (int i = 0; i < expected.length; i++) {
            if (u8(at + i) != (expected[i] & 0xff)) {
                return false;
            }
        }
        return true;
    }

    /**
     * Copies the NUL-terminated string at {@code base + offset} into {@code dst} (at least
     * MAX_STRING bytes long) and returns its length.
     */
    int string(long base, long offset, byte[] dst) throws LdCacheFormatException, IOException {
        long start = base + offset;
        if (start >= size) {
            throw new LdCacheFormatException("string offset " + offset + " outside the file");
        }
        long limit = Math.min(size, start + CacheFormat.MAX_STRING + 1);
        int length = 0;
        for (long at = start; at < limit; ) {
            byte[] page = page(at / PAGE);
            int from = (int) (at % PAGE);
            int to = (int) Math.min(PAGE, from + (limit - at));
            for (int i = from; i < to; i++) {
                if (page[i] == 0) {
                    spend(length + 1);
                    return length;
                }
                dst[length++] = page[i];
            }
            at += to - from;
        }
        throw new LdCacheFormatException("string at " + offset + " is not terminated within " + CacheFormat.MAX_STRING + " bytes");
    }

    private void spend(long scanned) throws LdCacheFormatException {
        scanBudget -= scanned;
        if (scanBudget < 0) {
            throw new LdCacheFormatException("string table references overlap far more than ldconfig's do");
        }
    }

    /** The page with this index, read on first use; the least recently used one makes room. */
    private byte[] page(long index) throws IOException {
        int victim = 0;
        for (int i = 0; i < PAGES; i++) {
            if (pageIndex[i] == index) {
                lastUse[i] = ++clock;
                return pages[i];
            }
            if (lastUse[i] < lastUse[victim]) {
                victim = i;
            }
        }
        long start = index * PAGE;
        if (index < 0 || start >= size) {
            throw new java.io.EOFException("read at " + start + " past the end (" + size + ")");
        }
        if (pages[victim] == null) {
            pages[victim] = new byte[PAGE];
        }
        pageIndex[victim] = -1;
        file.readFully(start, pages[victim], (int) Math.min(PAGE, size - start));
        pageIndex[victim] = index;
        lastUse[victim] = ++clock;
        return pages[victim];
    }
}
