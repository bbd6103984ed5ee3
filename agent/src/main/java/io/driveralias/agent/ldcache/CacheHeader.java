package io.driveralias.agent.ldcache;

import static io.driveralias.agent.ldcache.CacheFormat.MAX_STRING;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Where a cache keeps its parts, read and checked from the header and the extension directory
 * (never the entries: {@link CacheScanner} streams those). The entries the loader uses are
 * {@code count} records of {@code entrySize} bytes at {@code entriesAt}; their string offsets
 * count from {@code stringBase}; everything after them, from {@code tailStart} to the end, is
 * the string table (and, in glibc 2.33+ files, the extension), which a rewrite copies verbatim.
 * In the compat layout the loader reads only the new part, so the old part is not read at all:
 * a rewrite makes it again from the new one, as ldconfig would.
 */
final class CacheHeader {

    final CacheLayout layout;
    final long size;
    final long count;
    final long entriesAt;
    final int entrySize;
    final long stringBase;
    final long tailStart;
    /** The generator string's bytes (at most MAX_STRING), if the extension names one. */
    final Optional<byte[]> generator;
    /** String offsets of the glibc-hwcaps subdirectory names, in the order entries index them. */
    final long[] hwcaps;
    /** Extension sections that were not kept, and why. */
    final List<String> dropped;

    private CacheHeader(CacheLayout layout, long size, long count, long entriesAt, int entrySize, long stringBase,
                        Optional<byte[]> generator, long[] hwcaps, List<String> dropped) {
        this.layout = layout;
        this.size = size;
        this.count = count;
        this.entriesAt = entriesAt;
        this.entrySize = entrySize;
        this.stringBase = stringBase;
        this.tailStart = entriesAt + count * entrySize;
        this.generator = generator;
        this.hwcaps = hwcaps;
        this.dropped = List.copyOf(dropped);
    }

    static CacheHeader read(CacheBytes b) throws LdCacheFormatException, IOException {
        long size = b.size();
        if (size > CacheFormat.MAX_CACHE_BYTES) {
            throw new LdCacheFormatException("cache of " + size + " bytes (at most " + CacheFormat.MAX_CACHE_BYTES + ")");
        }
        if (b.hasBytes(0, CacheFormat.NEW_MAGIC)) {
            return readNew(b, 0, CacheLayout.NEW);
        }
        if (!b.hasBytes(0, CacheFormat.OLD_MAGIC) || size < CacheFormat.OLD_HEADER) {
            throw new LdCacheFormatException("not a loader cache (no ld.so.cache magic)");
        }
        long oldCount = b.u32(12);
        long oldEnd = CacheFormat.OLD_HEADER + oldCount * CacheFormat.OLD_ENTRY;
        if (oldEnd > size) {
            throw new LdCacheFormatException("old-format count " + oldCount + " does not fit in " + size + " bytes");
        }
        long newBase = CacheFormat.align(oldEnd, 8);
        if (newBase + CacheFormat.NEW_HEADER <= size && b.hasBytes(newBase, CacheFormat.NEW_MAGIC)) {
            return readNew(b, newBase, CacheLayout.COMPAT); // the loader ignores the old part then
        }
        return new CacheHeader(CacheLayout.OLD, size, oldCount, CacheFormat.OLD_HEADER, CacheFormat.OLD_ENTRY, oldEnd,
                Optional.empty(), new long[0], List.of());
    }

    private static CacheHeader readNew(CacheBytes b, long base, CacheLayout layout) throws LdCacheFormatException, IOException {
        long size = b.size();
        if (base + CacheFormat.NEW_HEADER > size) {
            throw new LdCacheFormatException("truncated header");
        }
        long count = b.u32(base + 20);
        int endian = b.u8(base + 28) & CacheFormat.ENDIAN_MASK;
        if (endian != 0 && endian != CacheFormat.ENDIAN_LITTLE) {
            throw new LdCacheFormatException("cache flags say " + (endian == 1 ? "invalid" : "big-endian"));
        }
        long entriesAt = base + CacheFormat.NEW_HEADER;
        if (entriesAt + count * CacheFormat.NEW_ENTRY > size) {
            throw new LdCacheFormatException("count " + count + " does not fit in " + size + " bytes");
        }
        Optional<byte[]> generator = Optional.empty();
        long[] hwcaps = new long[0];
        List<String> dropped = new ArrayList<>();
        long extension = b.u32(base + 32);
        if (extension != 0) {
            if (extension % 4 != 0 || extension + 8 > size || b.i32(extension) != CacheFormat.EXTENSION_MAGIC) {
                throw new LdCacheFormatException("extension directory at " + extension + " is malformed");
            }
            long sections = b.u32(extension + 4);
            if (sections > CacheFormat.MAX_SECTIONS || extension + 8 + sections * 16 > size) {
                throw new LdCacheFormatException(sections + " extension sections do not fit");
            }
            for (int i = 0; i < sections; i++) {
                long at = extension + 8 + i * 16L;
                long tag = b.u32(at);
                long offset = b.u32(at + 8);
                long length = b.u32(at + 12);
                if (offset + length > size) {
                    throw new LdCacheFormatException("extension section " + tag + " runs past the end");
                }
                if (tag == CacheFormat.TAG_GENERATOR) { // the loader, like this code, takes the last of a tag
                    if (length > MAX_STRING) {
                        throw new LdCacheFormatException("generator string of " + length + " bytes");
                    }
                    byte[] text = new byte[(int) length];
                    for (int j = 0; j < length; j++) {
                        text[j] = (byte) b.u8(offset + j);
                    }
                    generator = Optional.of(text);
                } else if (tag == CacheFormat.TAG_HWCAPS) {
                    hwcaps = hwcapsOffsets(b, offset, length);
                } else {
                    dropped.add("extension section with unknown tag " + tag + " (" + length + " bytes): ld.so ignores it");
                }
            }
        }
        CacheHeader header = new CacheHeader(layout, size, count, entriesAt, CacheFormat.NEW_ENTRY, base, generator, hwcaps, dropped);
        byte[] name = new byte[MAX_STRING + 1];
        for (long offset : header.hwcaps) {
            header.string(b, offset, name);
        }
        return header;
    }

    private static long[] hwcapsOffsets(CacheBytes b, long offset, long length) throws LdCacheFormatException, IOException {
        if (offset % 4 != 0 || length % 4 != 0 || length / 4 > CacheFormat.MAX_HWCAPS) {
            throw new LdCacheFormatException("glibc-hwcaps section misaligned or too long (" + length + " bytes)");
        }
        long[] offsets = new long[(int) (length / 4)];
        for (int i = 0; i < offsets.length; i++) {
            offsets[i] = b.u32(offset + 4L * i);
        }
        return offsets;
    }

    /**
     * The string at {@code offset} (from {@code stringBase}) into {@code dst}; its length. A
     * string must lie in the string table: one inside the header or the entries would change
     * under a rewrite (ldconfig never writes one there).
     */
    int string(CacheBytes b, long offset, byte[] dst) throws LdCacheFormatException, IOException {
        if (stringBase + offset < tailStart) {
            throw new LdCacheFormatException("string offset " + offset + " points into the header or the entries");
        }
        return b.string(stringBase, offset, dst);
    }

    boolean hasNewPart() {
        return layout != CacheLayout.OLD;
    }

    /** Reads entry {@code index} into {@code e}. */
    void entry(CacheBytes b, long index, RawEntry e) throws IOException {
        long at = entriesAt + index * entrySize;
        e.flags = b.i32(at);
        e.key = b.u32(at + 4);
        e.value = b.u32(at + 8);
        if (entrySize == CacheFormat.NEW_ENTRY) {
            e.osVersion = b.i32(at + 12);
            e.hwcap = b.i64(at + 16);
        } else {
            e.osVersion = 0;
            e.hwcap = 0;
        }
    }

    /** One entry's fields as stored, its string offsets unresolved; reused, never kept. */
    static final class RawEntry {
        int flags;
        long key;
        long value;
        int osVersion;
        long hwcap;
    }
}
