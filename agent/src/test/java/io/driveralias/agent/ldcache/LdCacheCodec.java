package io.driveralias.agent.ldcache;

import static io.driveralias.agent.ldcache.CacheFormat.ENDIAN_LITTLE;
import static io.driveralias.agent.ldcache.CacheFormat.EXTENSION_MAGIC;
import static io.driveralias.agent.ldcache.CacheFormat.NEW_ENTRY;
import static io.driveralias.agent.ldcache.CacheFormat.NEW_HEADER;
import static io.driveralias.agent.ldcache.CacheFormat.OLD_ENTRY;
import static io.driveralias.agent.ldcache.CacheFormat.OLD_HEADER;
import static io.driveralias.agent.ldcache.CacheFormat.TAG_GENERATOR;
import static io.driveralias.agent.ldcache.CacheFormat.TAG_HWCAPS;

import io.driveralias.agent.elf.ByteSource;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;

/**
 * The whole-file view of a cache, for tests: {@link #parse} reads through the agent's own
 * streaming reader (so every check it makes is the agent's) into an {@link LdCache};
 * {@link #serialize} writes one with a fresh string table, as ldconfig lays it out, without
 * trusting anything of an old file (the in-memory writer the agent used before it streamed,
 * kept as an independent oracle and to make large caches); {@link #rewrite} is the agent's
 * streaming update of a file held in memory.
 */
final class LdCacheCodec {

    static final int MAX_CACHE_BYTES = CacheFormat.MAX_CACHE_BYTES;
    private static final String OLD_MAGIC = "ld.so-1.7.0";
    private static final String NEW_MAGIC = "glibc-ld.so.cache1.1";

    private LdCacheCodec() {
    }

    static LdCache parse(byte[] file) throws LdCacheFormatException {
        try {
            CacheBytes b = new CacheBytes(ByteSource.of(file));
            CacheHeader h = CacheHeader.read(b);
            List<CacheEntry> entries = new ArrayList<>();
            CacheScanner.scan(b, h, (e, key, keyLength, value, valueLength) -> entries.add(new CacheEntry(e.flags,
                    text(key, keyLength), text(value, valueLength), e.osVersion, e.hwcap)));
            List<String> hwcaps = new ArrayList<>();
            byte[] name = new byte[CacheFormat.MAX_STRING + 1];
            for (long offset : h.hwcaps) {
                hwcaps.add(text(name, h.string(b, offset, name)));
            }
            return new LdCache(h.layout, entries, hwcaps, h.generator.map(g -> text(g, g.length)), h.dropped);
        } catch (IOException e) {
            throw new AssertionError("a read past the bounds the reader checked: " + e.getMessage(), e);
        }
    }

    /** The agent's streaming update of {@code file}, read back and checked as the updater does. */
    static byte[] rewrite(byte[] file, List<Alias> aliases) throws LdCacheFormatException {
        try {
            CacheEdit edit = CacheEdit.read(ByteSource.of(file), aliases, a -> OptionalInt.empty());
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            long size = edit.write((bytes, length) -> out.write(bytes, 0, length));
            byte[] written = out.toByteArray();
            if (written.length != size) {
                throw new AssertionError("wrote " + written.length + " bytes, said " + size);
            }
            edit.verifyWritten(ByteSource.of(written));
            return written;
        } catch (IOException | io.driveralias.agent.fs.ErrnoException e) {
            throw new AssertionError("a read past the bounds the reader checked: " + e.getMessage(), e);
        }
    }

    private static String text(byte[] bytes, int length) {
        return new String(bytes, 0, length, StandardCharsets.ISO_8859_1);
    }

    static byte[] serialize(LdCache cache) throws LdCacheFormatException {
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

    private static long align(long value, int to) {
        return (value + to - 1) & -to;
    }
}
