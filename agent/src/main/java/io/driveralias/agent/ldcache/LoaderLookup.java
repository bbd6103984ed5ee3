package io.driveralias.agent.ldcache;

import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.fs.ReadableFile;
import io.driveralias.agent.fs.RootFs;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * What a root's loader cache answers for a few names, as glibc's loader asks it: among the
 * entries whose key compares equal to the name, the first in the file's order whose flags are the
 * loader's ABI (the root's own {@code libc.so.6}'s, else this machine's). That is where the loader
 * looks before its default directories, and what ldconfig's order decides: a directory named
 * earlier in {@code ld.so.conf} (NVIDIA's {@code 00-compat-*.conf} for CUDA's forward-compatibility
 * libraries) comes first. glibc-hwcaps and legacy hwcap entries are not taken.
 *
 * <p>Read as the updater reads: in-root, a regular file of at most 16 MiB, streamed through a
 * few pages, one checking pass that compares keys as bytes and keeps at most one entry per name
 * and ABI. Nothing is written.
 */
public final class LoaderLookup {

    private static final String CACHE = "/etc/ld.so.cache";
    private static final byte[] LIBC = "libc.so.6".getBytes(StandardCharsets.ISO_8859_1);
    private static final int MAX_NAMES = 64;
    private static final int MAX_ABIS = 4;

    /**
     * The cache's answers.
     *
     * @param present  the root has a cache the agent could read
     * @param paths    the path each name resolves to, for the names the cache lists
     * @param problem  why a cache that is there was not read, if it was not
     */
    public record Answer(boolean present, Map<String, String> paths, Optional<String> problem) {

        public Answer {
            paths = Map.copyOf(paths);
        }

        static Answer none() {
            return new Answer(false, Map.of(), Optional.empty());
        }
    }

    private LoaderLookup() {
    }

    /** The cache's answer for each of {@code names} (at most {@value #MAX_NAMES}), in {@code root}. */
    public static Answer lookup(RootFs root, Collection<String> names) {
        List<String> wanted = names.stream().distinct().limit(MAX_NAMES).toList();
        try (ReadableFile file = root.openRegularFile(CACHE)) {
            if (file.size() > CacheFormat.MAX_CACHE_BYTES) {
                return new Answer(true, Map.of(), Optional.of(CACHE + " is " + file.size() + " bytes: not read"));
            }
            return read(file, wanted);
        } catch (ErrnoException e) {
            return Answer.none();
        } catch (LdCacheFormatException | IOException e) {
            return new Answer(true, Map.of(), Optional.of(CACHE + " not read: " + e.getMessage()));
        }
    }

    private static Answer read(ReadableFile file, List<String> wanted) throws LdCacheFormatException, IOException {
        byte[][] keys = wanted.stream().map(n -> n.getBytes(StandardCharsets.ISO_8859_1)).toArray(byte[][]::new);
        // Per name, the first entry of each ABI, in the file's order.
        List<Map<Integer, String>> firsts = wanted.stream().<Map<Integer, String>>map(n -> new LinkedHashMap<>()).toList();
        OptionalInt[] libc = {OptionalInt.empty()};
        CacheBytes bytes = new CacheBytes(file);
        CacheHeader header = CacheHeader.read(bytes);
        CacheScanner.scan(bytes, header, (e, key, keyLength, value, valueLength) -> {
            if (e.hwcap != 0) {
                return;
            }
            if (libc[0].isEmpty() && LoaderOrder.libcmp(key, keyLength, LIBC, LIBC.length) == 0) {
                libc[0] = OptionalInt.of(e.flags);
            }
            for (int i = 0; i < keys.length; i++) {
                Map<Integer, String> first = firsts.get(i);
                if (LoaderOrder.libcmp(key, keyLength, keys[i], keys[i].length) == 0
                        && !first.containsKey(e.flags) && first.size() < MAX_ABIS) {
                    first.put(e.flags, new String(value, 0, valueLength, StandardCharsets.ISO_8859_1));
                }
            }
        });
        int abi = libc[0].orElse(machineFlags());
        Map<String, String> paths = new LinkedHashMap<>();
        for (int i = 0; i < keys.length; i++) {
            String path = firsts.get(i).get(abi);
            if (path != null) {
                paths.put(wanted.get(i), path);
            }
        }
        return new Answer(true, paths, Optional.empty());
    }

    /** The loader's flags on this machine, for a cache without libc.so.6. */
    private static int machineFlags() {
        return switch (System.getProperty("os.arch")) {
            case "aarch64", "arm64" -> LoaderFlags.FLAG_ELF_LIBC6 | LoaderFlags.FLAG_AARCH64_LIB64;
            default -> LoaderFlags.FLAG_ELF_LIBC6 | LoaderFlags.FLAG_X8664_LIB64;
        };
    }
}
