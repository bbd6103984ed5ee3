package io.driveralias.agent.ldcache;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Reads and writes glibc's {@code /etc/ld.so.cache} (layouts of sysdeps/generic/dl-cache.h),
 * without I/O. The file comes from a container and the agent is root: every count, offset and
 * string is checked against the buffer before use, loops are bounded by the buffer size, and
 * {@link LdCacheFormatException} is the only failure. Little-endian only (x86-64, arm64).
 *
 * <p>Writing builds a fresh string table like ldconfig does (offsets relative to the new
 * header), so nothing of the old file's layout has to be trusted. The extension directory
 * (glibc 2.33+) keeps its two known sections, the generator string and the glibc-hwcaps
 * subdirectory names, whose order is kept so that the indices in entries stay right. Unknown
 * sections are dropped and reported: their contents may hold string offsets this writer
 * moved, and ld.so skips tags it does not know, so dropping is what it would do anyway.
 */
public final class LdCacheCodec {

    /** ldconfig's cache for a full distribution is well under 1 MiB. */
    public static final int MAX_CACHE_BYTES = 16 << 20;
    /** PATH_MAX: ldconfig builds values from real paths. */
    static final int MAX_STRING = 4096;
    static final int MAX_SECTIONS = 64;
    /** glibc knows a handful of glibc-hwcaps subdirectories (x86-64-v2..v4, power10, ...). */
    static final int MAX_HWCAPS = 1024;

    static final String OLD_MAGIC = "ld.so-1.7.0";
    static final String NEW_MAGIC = "glibc-ld.so.cache1.1";
    static final int OLD_HEADER = 16;
    static final int OLD_ENTRY = 12;
    static final int NEW_HEADER = 48;
    static final int NEW_ENTRY = 24;
    static final int EXTENSION_MAGIC = 0xeaa42174;
    static final int TAG_GENERATOR = 0;
    static final int TAG_HWCAPS = 1;
    private static final int ENDIAN_MASK = 3;
    private static final int ENDIAN_LITTLE = 2;

    private LdCacheCodec() {
    }

    public static LdCache parse(byte[] file) throws LdCacheFormatException {
        if (file.length > MAX_CACHE_BYTES) {
            throw new LdCacheFormatException("cache of " + file.length + " bytes (at most " + MAX_CACHE_BYTES + ")");
        }
        ByteBuffer b = ByteBuffer.wrap(file).order(ByteOrder.LITTLE_ENDIAN);
        if (hasMagic(file, 0, NEW_MAGIC)) {
            return parseNew(b, 0, CacheLayout.NEW);
        }
        if (!hasMagic(file, 0, OLD_MAGIC) || file.length < OLD_HEADER) {
            throw new LdCacheFormatException("not a loader cache (no ld.so.cache magic)");
        }
        long oldCount = u32(b, 12);
        long oldEnd = OLD_HEADER + oldCount * OLD_ENTRY;
        if (oldEnd > file.length) {
            throw new LdCacheFormatException("old-format count " + oldCount + " does not fit in " + file.length + " bytes");
        }
        int newBase = (int) align(oldEnd, 8);
        if (newBase + NEW_HEADER <= file.length && hasMagic(file, newBase, NEW_MAGIC)) {
            return parseNew(b, newBase, CacheLayout.COMPAT); // the loader ignores the old part then
        }
        List<CacheEntry> entries = new ArrayList<>((int) oldCount);
        CacheStrings strings = new CacheStrings(file, (int) oldEnd);
        for (int i = 0; i < oldCount; i++) {
            int at = OLD_HEADER + i * OLD_ENTRY;
            entries.add(new CacheEntry(b.getInt(at), strings.at(u32(b, at + 4)), strings.at(u32(b, at + 8)), 0, 0));
        }
        checkOrder(entries);
        return new LdCache(CacheLayout.OLD, entries, List.of(), Optional.empty(), List.of());
    }

    private static LdCache parseNew(ByteBuffer b, int base, CacheLayout layout) throws LdCacheFormatException {
        int size = b.capacity();
        if (base + NEW_HEADER > size) {
            throw new LdCacheFormatException("truncated header");
        }
        long count = u32(b, base + 20);
        int endian = b.get(base + 28) & ENDIAN_MASK;
        if (endian != 0 && endian != ENDIAN_LITTLE) {
            throw new LdCacheFormatException("cache flags say " + (endian == 1 ? "invalid" : "big-endian"));
        }
        if (base + NEW_HEADER + count * NEW_ENTRY > size) {
            throw new LdCacheFormatException("count " + count + " does not fit in " + size + " bytes");
        }
        CacheStrings strings = new CacheStrings(b.array(), base);
        List<CacheEntry> entries = new ArrayList<>((int) count);
        for (int i = 0; i < count; i++) {
            int at = base + NEW_HEADER + i * NEW_ENTRY;
            entries.add(new CacheEntry(b.getInt(at), strings.at(u32(b, at + 4)), strings.at(u32(b, at + 8)),
                    b.getInt(at + 12), b.getLong(at + 16)));
        }
        checkOrder(entries);
        Optional<String> generator = Optional.empty();
        List<String> hwcaps = List.of();
        List<String> dropped = new ArrayList<>();
        long extension = u32(b, base + 32);
        if (extension != 0) {
            if (extension % 4 != 0 || extension + 8 > size || b.getInt((int) extension) != EXTENSION_MAGIC) {
                throw new LdCacheFormatException("extension directory at " + extension + " is malformed");
            }
            long sections = u32(b, (int) extension + 4);
            if (sections > MAX_SECTIONS || extension + 8 + sections * 16 > size) {
                throw new LdCacheFormatException(sections + " extension sections do not fit");
            }
            for (int i = 0; i < sections; i++) {
                int at = (int) extension + 8 + i * 16;
                long tag = u32(b, at);
                long offset = u32(b, at + 8);
                long length = u32(b, at + 12);
                if (offset + length > size) {
                    throw new LdCacheFormatException("extension section " + tag + " runs past the end");
                }
                if (tag == TAG_GENERATOR) { // the loader, like this code, takes the last of a tag
                    if (length > MAX_STRING) {
                        throw new LdCacheFormatException("generator string of " + length + " bytes");
                    }
                    generator = Optional.of(new String(b.array(), (int) offset, (int) length, StandardCharsets.ISO_8859_1));
                } else if (tag == TAG_HWCAPS) {
                    hwcaps = hwcapsNames(b, strings, offset, length);
                } else {
                    dropped.add("extension section with unknown tag " + tag + " (" + length + " bytes): ld.so ignores it");
                }
            }
        }
        return new LdCache(layout, entries, hwcaps, generator, dropped);
    }

    private static List<String> hwcapsNames(ByteBuffer b, CacheStrings strings, long offset, long length)
            throws LdCacheFormatException {
        if (offset % 4 != 0 || length % 4 != 0 || length / 4 > MAX_HWCAPS) {
            throw new LdCacheFormatException("glibc-hwcaps section misaligned or too long (" + length + " bytes)");
        }
        List<String> names = new ArrayList<>();
        for (long at = offset; at < offset + length; at += 4) {
            names.add(strings.at(u32(b, (int) at)));
        }
        return names;
    }

    /** The loader binary-searches: a cache out of its order would be made worse by an insert. */
    private static void checkOrder(List<CacheEntry> entries) throws LdCacheFormatException {
        for (int i = 1; i < entries.size(); i++) {
            if (LoaderOrder.libcmp(entries.get(i - 1).key(), entries.get(i).key()) < 0) {
                throw new LdCacheFormatException("entries " + (i - 1) + " and " + i + " are not in the loader's order");
            }
        }
    }

    public static byte[] serialize(LdCache cache) throws LdCacheFormatException {
        List<CacheEntry> entries = cache.entries();
        List<CacheEntry> old = cache.layout() == CacheLayout.NEW ? List.of()
                : entries.stream().filter(e -> e.hwcap() == 0).toList();
        if (cache.layout() == CacheLayout.OLD && old.size() != entries.size()) {
            throw new LdCacheFormatException("the old layout cannot hold hwcap entries");
        }
        // ldconfig pads the old part to an even count by repeating its last entry, so that
        // the new header after it is 8-byte aligned.
        int oldCount = cache.layout() == CacheLayout.COMPAT ? (old.size() + 1) & ~1 : old.size();
        long oldEnd = cache.layout() == CacheLayout.NEW ? 0 : OLD_HEADER + (long) oldCount * OLD_ENTRY;
        long base = cache.layout() == CacheLayout.COMPAT ? align(oldEnd, 8) : oldEnd;
        long tableStart = cache.layout() == CacheLayout.OLD ? 0 : NEW_HEADER + (long) entries.size() * NEW_ENTRY;

        StringTable table = new StringTable(tableStart);
        for (CacheEntry e : entries) {
            table.add(e.key());
            table.add(e.value());
        }
        for (String name : cache.hwcapsSubdirectories()) {
            table.add(name);
        }
        boolean extension = cache.layout() != CacheLayout.OLD
                && (cache.generator().isPresent() || !cache.hwcapsSubdirectories().isEmpty());
        long extensionAt = align(base + tableStart + table.size(), 4);
        long total = extension ? extensionAt + extensionSize(cache) : base + tableStart + table.size();
        if (total > MAX_CACHE_BYTES) {
            throw new LdCacheFormatException("the cache would be " + total + " bytes (at most " + MAX_CACHE_BYTES + ")");
        }
        ByteBuffer out = ByteBuffer.allocate((int) total).order(ByteOrder.LITTLE_ENDIAN);
        if (cache.layout() != CacheLayout.NEW) {
            out.put(OLD_MAGIC.getBytes(StandardCharsets.ISO_8859_1)).putInt(12, oldCount).position(OLD_HEADER);
            long shift = base - oldEnd; // old offsets count from the end of the old entries
            for (int i = 0; i < oldCount; i++) {
                CacheEntry e = old.get(Math.min(i, old.size() - 1));
                out.putInt(e.flags()).putInt((int) (shift + table.offset(e.key()))).putInt((int) (shift + table.offset(e.value())));
            }
        }
        if (cache.layout() != CacheLayout.OLD) {
            out.position((int) base);
            out.put(NEW_MAGIC.getBytes(StandardCharsets.ISO_8859_1));
            out.putInt(entries.size()).putInt(table.size()).put((byte) ENDIAN_LITTLE).put(new byte[3]);
            out.putInt(extension ? (int) extensionAt : 0).put(new byte[12]);
            for (CacheEntry e : entries) {
                out.putInt(e.flags()).putInt(table.offset(e.key())).putInt(table.offset(e.value()))
                        .putInt(e.osVersion()).putLong(e.hwcap());
            }
        }
        out.position((int) (base + tableStart));
        out.put(table.bytes());
        if (extension) {
            writeExtension(out, (int) extensionAt, cache, table);
        }
        return out.array();
    }

    private static long extensionSize(LdCache cache) {
        int sections = (cache.generator().isPresent() ? 1 : 0) + (cache.hwcapsSubdirectories().isEmpty() ? 0 : 1);
        return 8 + 16L * sections + 4L * cache.hwcapsSubdirectories().size()
                + cache.generator().map(String::length).orElse(0);
    }

    /** ldconfig's arrangement: directory, glibc-hwcaps index array (4-aligned), generator. */
    private static void writeExtension(ByteBuffer out, int at, LdCache cache, StringTable table) {
        List<String> hwcaps = cache.hwcapsSubdirectories();
        int sections = (cache.generator().isPresent() ? 1 : 0) + (hwcaps.isEmpty() ? 0 : 1);
        int hwcapsAt = at + 8 + 16 * sections;
        int generatorAt = hwcapsAt + 4 * hwcaps.size();
        out.position(at);
        out.putInt(EXTENSION_MAGIC).putInt(sections);
        cache.generator().ifPresent(g -> out.putInt(TAG_GENERATOR).putInt(0).putInt(generatorAt).putInt(g.length()));
        if (!hwcaps.isEmpty()) {
            out.putInt(TAG_HWCAPS).putInt(0).putInt(hwcapsAt).putInt(4 * hwcaps.size());
        }
        for (String name : hwcaps) {
            out.putInt(table.offset(name));
        }
        cache.generator().ifPresent(g -> out.put(g.getBytes(StandardCharsets.ISO_8859_1)));
    }

    private static boolean hasMagic(byte[] file, int at, String magic) {
        if (at < 0 || at + magic.length() > file.length) {
            return false;
        }
        for (int i = 0; i < magic.length(); i++) {
            if (file[at + i] != magic.charAt(i)) {
                return false;
            }
        }
        return true;
    }

    private static long u32(ByteBuffer b, int at) {
        return Integer.toUnsignedLong(b.getInt(at));
    }

    private static long align(long value, int to) {
        return (value + to - 1) & -to;
    }
}
