package io.driveralias.agent.ldcache;

import static io.driveralias.agent.ldcache.CacheFormat.NEW_ENTRY;
import static io.driveralias.agent.ldcache.CacheFormat.NEW_HEADER;
import static io.driveralias.agent.ldcache.CacheFormat.OLD_ENTRY;
import static io.driveralias.agent.ldcache.CacheFormat.OLD_HEADER;

import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.ldcache.CacheHeader.RawEntry;
import java.io.IOException;
import java.util.Arrays;
import java.util.List;

/**
 * Writes a checked cache with its aliases placed, streaming, in the layout it was read in:
 * header with the new count; the entries, copied one at a time with their string offsets
 * shifted by how much the entry array grew, the new ones merged in at their places and the
 * replaced ones left out; the old string table (everything after the entries) copied
 * verbatim; the aliases' paths appended (each key is the tail of its path, as ldconfig shares
 * suffixes); and, where the file had one, a new extension directory with the generator and the
 * glibc-hwcaps names' offsets moved along. Unknown extension sections are dropped: ld.so skips
 * tags it does not know. In the compat layout the old part is made again from the new entries
 * (those without hwcap), padded to an even count like ldconfig's. Memory: the placements and
 * a few small buffers, whatever the file's size.
 */
final class CacheRewriter {

    private final CacheBytes b;
    private final CacheHeader h;
    private final List<Placement> added;
    private final long[] removed;
    private final long count;
    private final long plainCount;
    private final long oldCount;
    private final long base;
    private final long tailAt;
    private final long shift;
    private final long[] valueOffsets;
    private final long stringsEnd;
    private final long extensionAt;
    private final long size;

    /** {@code placements} in {@link Placement#compareNew} order; {@code plainEntries}: the file's entries without hwcap. */
    CacheRewriter(CacheBytes b, CacheHeader h, List<Placement> placements, long plainEntries)
            throws LdCacheFormatException, IOException {
        this.b = b;
        this.h = h;
        this.added = List.copyOf(placements);
        this.removed = placements.stream().flatMapToLong(p -> Arrays.stream(p.replaced())).sorted().toArray();
        RawEntry e = new RawEntry();
        long removedPlain = 0;
        for (long index : removed) {
            h.entry(b, index, e);
            removedPlain += e.hwcap == 0 ? 1 : 0;
        }
        this.count = h.count - removed.length + added.size();
        this.plainCount = plainEntries - removedPlain + added.size();
        this.oldCount = h.layout == CacheLayout.COMPAT ? (plainCount + 1) & ~1L : 0;
        this.base = h.layout == CacheLayout.COMPAT ? CacheFormat.align(OLD_HEADER + oldCount * OLD_ENTRY, 8) : 0;
        this.tailAt = h.hasNewPart() ? base + NEW_HEADER + count * NEW_ENTRY : OLD_HEADER + count * OLD_ENTRY;
        // New-part offsets count from the new header; old-layout ones from the end of the entries.
        long stringBase = h.hasNewPart() ? base : tailAt;
        this.shift = (tailAt - stringBase) - (h.tailStart - h.stringBase);
        long tailLength = h.size - h.tailStart;
        this.valueOffsets = new long[added.size()];
        long at = tailAt - stringBase + tailLength;
        for (int i = 0; i < added.size(); i++) {
            valueOffsets[i] = at;
            at += added.get(i).path().length + 1;
        }
        this.stringsEnd = stringBase + at;
        boolean extension = h.hasNewPart() && (h.generator.isPresent() || h.hwcaps.length > 0);
        this.extensionAt = extension ? CacheFormat.align(stringsEnd, 4) : 0;
        this.size = extension ? extensionAt + extensionSize() : stringsEnd;
        if (size > CacheFormat.MAX_CACHE_BYTES) {
            throw new LdCacheFormatException("the cache would be " + size + " bytes (at most " + CacheFormat.MAX_CACHE_BYTES + ")");
        }
    }

    long size() {
        return size;
    }

    private int sections() {
        return (h.generator.isPresent() ? 1 : 0) + (h.hwcaps.length > 0 ? 1 : 0);
    }

    private long extensionSize() {
        return 8 + 16L * sections() + 4L * h.hwcaps.length + h.generator.map(g -> g.length).orElse(0);
    }

    void write(CacheOutput out) throws IOException, ErrnoException {
        if (h.layout == CacheLayout.COMPAT) {
            writeOldPart(out);
        }
        if (h.hasNewPart()) {
            out.bytes(CacheFormat.NEW_MAGIC).i32(count).i32(stringsEnd - tailAt).u8(CacheFormat.ENDIAN_LITTLE).zeros(3)
                    .i32(extensionAt).zeros(12);
            forEachEntry(e -> out.i32(e.flags).i32(e.key).i32(e.value).i32(e.osVersion).i64(e.hwcap));
        } else {
            out.bytes(CacheFormat.OLD_MAGIC).u8(0).i32(count);
            forEachEntry(e -> out.i32(e.flags).i32(e.key).i32(e.value));
        }
        out.copy(b.source(), h.tailStart, h.size - h.tailStart);
        for (Placement p : added) {
            out.bytes(p.path()).u8(0);
        }
        if (extensionAt != 0) {
            writeExtension(out);
        }
        out.flush();
        if (out.position() != size) {
            throw new IllegalStateException("wrote " + out.position() + " bytes of a cache planned at " + size);
        }
    }

    /** The old-format entries the loader of the glibc 2.0 era would read: every entry without hwcap. */
    private void writeOldPart(CacheOutput out) throws IOException, ErrnoException {
        out.bytes(CacheFormat.OLD_MAGIC).u8(0).i32(oldCount);
        long oldShift = base - (OLD_HEADER + oldCount * OLD_ENTRY); // old offsets count from the end of the old entries
        RawEntry last = new RawEntry();
        forEachEntry(e -> {
            if (e.hwcap == 0) {
                out.i32(e.flags).i32(e.key + oldShift).i32(e.value + oldShift);
                last.flags = e.flags;
                last.key = e.key;
                last.value = e.value;
            }
        });
        if (oldCount > plainCount) { // ldconfig repeats the last entry so that the new header is 8-aligned
            out.i32(last.flags).i32(last.key + oldShift).i32(last.value + oldShift);
        }
        out.zeros(base - out.position());
    }

    /** ldconfig's arrangement: directory, glibc-hwcaps index array (4-aligned), generator. */
    private void writeExtension(CacheOutput out) throws IOException, ErrnoException {
        out.zeros(extensionAt - out.position());
        long hwcapsAt = extensionAt + 8 + 16L * sections();
        long generatorAt = hwcapsAt + 4L * h.hwcaps.length;
        out.i32(CacheFormat.EXTENSION_MAGIC).i32(sections());
        if (h.generator.isPresent()) {
            out.i32(CacheFormat.TAG_GENERATOR).i32(0).i32(generatorAt).i32(h.generator.get().length);
        }
        if (h.hwcaps.length > 0) {
            out.i32(CacheFormat.TAG_HWCAPS).i32(0).i32(hwcapsAt).i32(4L * h.hwcaps.length);
        }
        for (long name : h.hwcaps) {
            out.i32(name + shift);
        }
        if (h.generator.isPresent()) {
            out.bytes(h.generator.get());
        }
    }

    @FunctionalInterface
    private interface EntryWriter {
        void write(RawEntry e) throws IOException, ErrnoException;
    }

    /** Every entry of the new file in order: kept ones with shifted offsets, new ones at their places. */
    private void forEachEntry(EntryWriter writer) throws IOException, ErrnoException {
        RawEntry e = new RawEntry();
        int next = 0;
        int skip = 0;
        for (long i = 0; i <= h.count; i++) {
            for (; next < added.size() && added.get(next).insertAt() == i; next++) {
                Placement p = added.get(next);
                e.flags = p.flags();
                e.value = valueOffsets[next];
                e.key = e.value + p.path().length - p.key().length;
                e.osVersion = 0;
                e.hwcap = 0;
                writer.write(e);
            }
            if (i == h.count) {
                break;
            }
            if (skip < removed.length && removed[skip] == i) {
                skip++;
                continue;
            }
            h.entry(b, i, e);
            e.key += shift;
            e.value += shift;
            writer.write(e);
        }
    }
}
