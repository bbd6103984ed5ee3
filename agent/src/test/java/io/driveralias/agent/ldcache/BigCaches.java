package io.driveralias.agent.ldcache;

import io.driveralias.agent.testing.NativeLibraries;
import io.driveralias.agent.testing.Processes;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Large, valid caches made by the host's real ldconfig: the C library in the usual directory,
 * and as many directories with long names as it takes, each holding the same few hundred tiny
 * libraries (one compiled, the others the same bytes with another SONAME). ldconfig lays the
 * string table out its own way (suffixes shared, not in entry order), which is what the
 * streaming reader has to cope with.
 */
public final class BigCaches {

    public static final String LIB_DIR = "/usr/lib/x86_64-linux-gnu";
    private static final int LIBRARIES_PER_DIRECTORY = 500;
    private static final String STEM = "libbig00000";

    private BigCaches() {
    }

    /**
     * A root with an {@code /etc/ld.so.cache} of about {@code target} bytes (new layout), whose
     * directories have names of {@code nameLength} bytes; returns the cache. ldconfig inserts
     * each entry into a sorted list (quadratic): long names give large files of fewer entries.
     */
    static Path make(Path root, long target, int nameLength) {
        try {
            Path lib = Files.createDirectories(root.resolve(LIB_DIR.substring(1)));
            Files.copy(Path.of(LIB_DIR, "libc.so.6").toRealPath(), lib.resolve("libc.so.6"));
            Files.createDirectories(root.resolve("etc"));
            Files.write(root.resolve("etc/ld.so.conf"), List.of(LIB_DIR));
            addLibraries(root, target, nameLength);
            return root.resolve("etc/ld.so.cache");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Adds to {@code root} (an image's root, say) enough libraries in directories of
     * {@code nameLength}-byte names, listed in its {@code /etc/ld.so.conf}, for a cache of about
     * {@code target} bytes, and runs ldconfig on it.
     */
    public static void addLibraries(Path root, long target, int nameLength) throws IOException {
        Path variants = Files.createDirectories(root.resolve("variants"));
        byte[] elf = Files.readAllBytes(NativeLibraries.compile(root.resolve("src"), STEM + ".so.1", STEM + ".so.1"));
        for (int v = 0; v < LIBRARIES_PER_DIRECTORY; v++) {
            String stem = String.format("libbig%05d", v);
            Files.write(variants.resolve(stem + ".so.1"), replaceAll(elf, STEM, stem));
        }
        long bytesPerEntry = 24 + ("/opt/" + "/d00000/libbig00000.so.1").length() + nameLength + 1;
        long directories = Math.max(1, target / (LIBRARIES_PER_DIRECTORY * bytesPerEntry));
        List<String> conf = new ArrayList<>();
        StringBuilder longName = new StringBuilder("p".repeat(nameLength)); // in components a file system takes
        for (int at = 200; at < longName.length(); at += 200) {
            longName.setCharAt(at, '/');
        }
        for (int d = 0; d < directories; d++) {
            String dir = "/opt/" + longName + String.format("/d%05d", d);
            Path path = Files.createDirectories(root.resolve(dir.substring(1)));
            for (int v = 0; v < LIBRARIES_PER_DIRECTORY; v++) {
                String name = String.format("libbig%05d.so.1", v);
                Files.createLink(path.resolve(name), variants.resolve(name));
            }
            conf.add(dir);
        }
        Files.write(root.resolve("etc/ld.so.conf"), conf, java.nio.file.StandardOpenOption.APPEND);
        Processes.check(List.of("ldconfig", "-X", "-r", root.toString()));
    }

    /**
     * A cache of about {@code target} bytes made by the codec instead: short names, so as many
     * entries as fit (about 60 bytes each), all in one directory besides the C library's.
     */
    public static byte[] manyEntries(long target) throws LdCacheFormatException {
        List<CacheEntry> entries = new ArrayList<>();
        entries.add(new CacheEntry(0x0303, "libc.so.6", LIB_DIR + "/libc.so.6", 0, 0));
        for (int i = 0; entries.size() * 62L < target; i++) {
            String key = "libq" + i + ".so.1";
            entries.add(new CacheEntry(0x0303, key, "/opt/q/" + key, 0, 0));
        }
        entries.sort((a, b) -> LoaderOrder.libcmp(b.key(), a.key()));
        return LdCacheCodec.serialize(new LdCache(CacheLayout.NEW, entries, List.of(), java.util.Optional.of("the codec"),
                List.of()));
    }

    /**
     * Like {@link #manyEntries}, but with the strings in random order (seeded): every entry's
     * strings on another page than its neighbours', the most reads a streaming pass can need.
     */
    static byte[] scattered(long target) throws LdCacheFormatException {
        LdCache cache = LdCacheCodec.parse(manyEntries(target));
        List<Integer> order = new ArrayList<>();
        for (int i = 0; i < cache.entries().size(); i++) {
            order.add(i);
        }
        java.util.Collections.shuffle(order, new java.util.Random(0x5ca77e7L));
        long tableStart = CacheFormat.NEW_HEADER + (long) CacheFormat.NEW_ENTRY * order.size();
        long[] valueAt = new long[order.size()];
        java.io.ByteArrayOutputStream table = new java.io.ByteArrayOutputStream();
        for (int i : order) {
            valueAt[i] = tableStart + table.size();
            table.writeBytes((cache.entries().get(i).value() + "\0").getBytes(StandardCharsets.ISO_8859_1));
        }
        java.nio.ByteBuffer out = java.nio.ByteBuffer.allocate((int) tableStart + table.size()).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        out.put(CacheFormat.NEW_MAGIC).putInt(order.size()).putInt(table.size()).put((byte) CacheFormat.ENDIAN_LITTLE)
                .put(new byte[3]).putInt(0).put(new byte[12]);
        for (int i = 0; i < order.size(); i++) {
            CacheEntry e = cache.entries().get(i);
            long keyAt = valueAt[i] + e.value().length() - e.key().length();
            out.putInt(e.flags()).putInt((int) keyAt).putInt((int) valueAt[i]).putInt(0).putLong(0);
        }
        out.put(table.toByteArray());
        return out.array();
    }

    private static byte[] replaceAll(byte[] bytes, String from, String to) {
        byte[] a = from.getBytes(StandardCharsets.US_ASCII);
        byte[] b = to.getBytes(StandardCharsets.US_ASCII);
        byte[] out = bytes.clone();
        for (int i = 0; i + a.length <= out.length; i++) {
            if (java.util.Arrays.equals(out, i, i + a.length, a, 0, a.length)) {
                System.arraycopy(b, 0, out, i, b.length);
            }
        }
        return out;
    }
}
