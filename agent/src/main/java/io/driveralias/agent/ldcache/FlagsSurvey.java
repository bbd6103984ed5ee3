package io.driveralias.agent.ldcache;

import io.driveralias.agent.ldcache.CacheHeader.RawEntry;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;

/**
 * The loader flags ldconfig gave the libraries of a few directories, learnt during the scan:
 * for an alias that comes without flags, its directory's say what its ABI is. Per directory,
 * libc.so.6's flags where it is there, else the most common among its glibc (FLAG_ELF_LIBC6)
 * entries; and, as a last resort, the flags of the cache's first libc.so.6.
 */
final class FlagsSurvey implements CacheScanner.Visitor {

    /** Real directories hold one or two ABIs; a hostile cache gets no more bookkeeping than this. */
    private static final int MAX_DISTINCT = 16;
    private static final byte[] LIBC = "libc.so.6".getBytes(StandardCharsets.ISO_8859_1);

    private final List<String> directories;
    private final byte[][] directoryBytes;
    private final OptionalInt[] libcOfDirectory;
    private final List<Map<Integer, Integer>> counts;
    private OptionalInt libc = OptionalInt.empty();

    FlagsSurvey(List<String> directories) {
        this.directories = List.copyOf(directories);
        this.directoryBytes = directories.stream().map(d -> d.getBytes(StandardCharsets.ISO_8859_1)).toArray(byte[][]::new);
        this.libcOfDirectory = new OptionalInt[directories.size()];
        Arrays.fill(libcOfDirectory, OptionalInt.empty());
        this.counts = directories.stream().<Map<Integer, Integer>>map(d -> new LinkedHashMap<>()).toList();
    }

    @Override
    public void entry(RawEntry e, byte[] key, int keyLength, byte[] value, int valueLength) {
        boolean isLibc = Arrays.equals(key, 0, keyLength, LIBC, 0, LIBC.length);
        if (isLibc && libc.isEmpty()) {
            libc = OptionalInt.of(e.flags);
        }
        if (e.hwcap != 0 || (e.flags & LoaderFlags.FLAG_TYPE_MASK) != LoaderFlags.FLAG_ELF_LIBC6) {
            return;
        }
        for (int d = 0; d < directoryBytes.length; d++) {
            if (!CacheScanner.inDirectory(value, valueLength, directoryBytes[d])) {
                continue;
            }
            if (isLibc && libcOfDirectory[d].isEmpty()) {
                libcOfDirectory[d] = OptionalInt.of(e.flags);
            }
            Map<Integer, Integer> seen = counts.get(d);
            if (seen.containsKey(e.flags) || seen.size() < MAX_DISTINCT) {
                seen.merge(e.flags, 1, Integer::sum);
            }
        }
    }

    OptionalInt ofDirectory(String directory) {
        int d = directories.indexOf(directory);
        if (d < 0) {
            return OptionalInt.empty();
        }
        if (libcOfDirectory[d].isPresent()) {
            return libcOfDirectory[d];
        }
        return counts.get(d).entrySet().stream().max(Map.Entry.comparingByValue())
                .map(m -> OptionalInt.of(m.getKey())).orElse(OptionalInt.empty());
    }

    OptionalInt libc() {
        return libc;
    }
}
