package io.driveralias.agent.ldcache;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * A loader cache held whole, for tests (the agent streams instead): the oracle the streaming
 * update is compared with. A loader cache as the agent understands it: entries in the loader's order, the glibc-hwcaps
 * subdirectory names that extension entries index, and the generator string. Anything the
 * file held beyond that is listed in {@code dropped} with the reason it could not be kept.
 */
record LdCache(CacheLayout layout, List<CacheEntry> entries, List<String> hwcapsSubdirectories,
                      Optional<String> generator, List<String> dropped) {

    public LdCache {
        entries = List.copyOf(entries);
        hwcapsSubdirectories = List.copyOf(hwcapsSubdirectories);
        dropped = List.copyOf(dropped);
    }

    /** Whether an entry names {@code directory/soname} under the key {@code soname}. */
    public boolean contains(String directory, String soname) {
        String path = Alias.of(directory, soname).path();
        return entries.stream().anyMatch(e -> !e.isHwcapsSubdirectoryEntry()
                && e.key().equals(soname) && e.value().equals(path));
    }

    /**
     * Whether the cache already says what {@link #withAliases} would make it say: for each
     * alias, exactly one entry with its SONAME in its directory, naming the link, with its flags.
     */
    public boolean isCurrent(List<Alias> aliases) {
        Map<String, List<CacheEntry>> byKey = new HashMap<>();
        aliases.forEach(a -> byKey.put(a.soname(), new ArrayList<>()));
        for (CacheEntry e : entries) {
            List<CacheEntry> list = byKey.get(e.key());
            if (list != null) {
                list.add(e);
            }
        }
        for (Alias alias : aliases) {
            List<CacheEntry> same = byKey.get(alias.soname()).stream().filter(e -> sameKeyAndDirectory(e, alias)).toList();
            if (same.size() != 1 || !same.getFirst().value().equals(alias.path())
                    || (alias.flags().isPresent() && same.getFirst().flags() != alias.flags().getAsInt())) {
                return false;
            }
        }
        return true;
    }

    /**
     * The path the loader would take from the cache for {@code soname}, for a loader whose ABI
     * flags are {@code flags}: the first plain entry whose key compares equal (as the loader
     * compares) with those flags. glibc-hwcaps and legacy hwcap entries are not considered.
     */
    public Optional<String> resolve(String soname, int flags) {
        for (CacheEntry e : entries) {
            if (LoaderOrder.libcmp(soname, e.key()) == 0 && e.flags() == flags && e.hwcap() == 0) {
                return Optional.of(e.value());
            }
        }
        return Optional.empty();
    }

    /**
     * The flags ldconfig gave the libraries of {@code directory}: libc.so.6's where it is
     * there, else the most common among that directory's glibc (FLAG_ELF_LIBC6) entries.
     */
    public OptionalInt flagsOfDirectory(String directory) {
        String dir = Alias.of(directory, "x").directory();
        Map<Integer, Integer> counts = new LinkedHashMap<>();
        for (CacheEntry e : entries) {
            if (e.hwcap() != 0 || !e.directory().equals(dir)
                    || (e.flags() & LoaderFlags.FLAG_TYPE_MASK) != LoaderFlags.FLAG_ELF_LIBC6) {
                continue;
            }
            if (e.key().equals("libc.so.6")) {
                return OptionalInt.of(e.flags());
            }
            counts.merge(e.flags(), 1, Integer::sum);
        }
        return counts.entrySet().stream().max(Map.Entry.comparingByValue())
                .map(m -> OptionalInt.of(m.getKey())).orElse(OptionalInt.empty());
    }

    /**
     * This cache with an entry {@code soname -> directory/soname} for each alias, in the place
     * ldconfig would put it. Entries with the same SONAME in the same directory (stale ones,
     * or ones naming another file there) are replaced; other directories' entries stay, and
     * ones that sort equal keep their precedence, as they would after a real ldconfig run.
     *
     * @throws IllegalArgumentException if an alias has no flags or there are too many
     */
    public LdCache withAliases(List<Alias> aliases) {
        if (aliases.size() > CacheFormat.MAX_ALIASES) {
            throw new IllegalArgumentException(aliases.size() + " aliases (at most " + CacheFormat.MAX_ALIASES + ")");
        }
        Map<String, Alias> byPath = new LinkedHashMap<>();
        for (Alias alias : aliases) {
            if (alias.flags().isEmpty()) {
                throw new IllegalArgumentException("no loader flags for " + alias.path());
            }
            byPath.put(alias.path(), alias);
        }
        Map<String, List<String>> replaced = new HashMap<>();
        for (Alias alias : byPath.values()) {
            replaced.computeIfAbsent(alias.soname(), k -> new ArrayList<>()).add(alias.directory());
        }
        List<CacheEntry> result = new ArrayList<>(entries.size() + byPath.size());
        for (CacheEntry e : entries) {
            List<String> dirs = replaced.get(e.key());
            if (dirs == null || e.isHwcapsSubdirectoryEntry() || !dirs.contains(e.directory())) {
                result.add(e);
            }
        }
        for (Alias alias : byPath.values()) {
            int flags = alias.flags().getAsInt();
            result.add(insertionPoint(result, alias.soname(), flags),
                    new CacheEntry(flags, alias.soname(), alias.path(), 0, 0));
        }
        return new LdCache(layout, result, hwcapsSubdirectories, generator, dropped);
    }

    private static boolean sameKeyAndDirectory(CacheEntry e, Alias alias) {
        return !e.isHwcapsSubdirectoryEntry() && e.key().equals(alias.soname())
                && e.directory().equals(alias.directory());
    }

    /** Binary search over the descending keys, then ldconfig's tie-break on flags. */
    private static int insertionPoint(List<CacheEntry> sorted, String key, int flags) {
        int lo = 0;
        int hi = sorted.size();
        while (lo < hi) { // first index whose key sorts at or below the new key
            int mid = (lo + hi) >>> 1;
            if (LoaderOrder.libcmp(sorted.get(mid).key(), key) > 0) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        while (lo < sorted.size() && !LoaderOrder.belongsAfter(LoaderOrder.libcmp(sorted.get(lo).key(), key), sorted.get(lo).flags(), flags)) {
            lo++;
        }
        return lo;
    }
}
