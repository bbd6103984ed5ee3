package io.driveralias.agent.ldcache;

import io.driveralias.agent.elf.ByteSource;
import io.driveralias.agent.fs.ErrnoException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.function.Function;

/**
 * One cache, read and checked in a single streaming pass, with each alias placed: whether it
 * already lists them all, and the new file if not. Costs a few small buffers plus what the
 * aliases need, whatever the file holds; {@link LdCacheFormatException} is its only refusal.
 */
final class CacheEdit {

    private final CacheBytes bytes;
    private final CacheHeader header;
    private final long plainEntries;
    private final List<Placement> placements;
    private final Optional<Alias> withoutFlags;

    private CacheEdit(CacheBytes bytes, CacheHeader header, long plainEntries, List<Placement> placements,
                      Optional<Alias> withoutFlags) {
        this.bytes = bytes;
        this.header = header;
        this.plainEntries = plainEntries;
        this.placements = placements;
        this.withoutFlags = withoutFlags;
    }

    /**
     * Reads {@code file} and places {@code aliases} (duplicates by path: the last one's flags).
     * An alias without flags takes its directory's, else {@code elfFlags}' answer, else libc.so.6's.
     *
     * @throws IllegalArgumentException if there are more than MAX_ALIASES aliases
     */
    static CacheEdit read(ByteSource file, List<Alias> aliases, Function<Alias, OptionalInt> elfFlags)
            throws LdCacheFormatException, IOException {
        if (aliases.size() > CacheFormat.MAX_ALIASES) {
            throw new IllegalArgumentException(aliases.size() + " aliases (at most " + CacheFormat.MAX_ALIASES + ")");
        }
        Map<String, Alias> byPath = new LinkedHashMap<>();
        aliases.forEach(a -> byPath.put(a.path(), a));
        CacheBytes bytes = new CacheBytes(file);
        CacheHeader header = CacheHeader.read(bytes);
        FlagsSurvey survey = new FlagsSurvey(byPath.values().stream().filter(a -> a.flags().isEmpty())
                .map(Alias::directory).distinct().toList());
        long[] plain = new long[1];
        CacheScanner.scan(bytes, header, (e, key, keyLength, value, valueLength) -> {
            plain[0] += e.hwcap == 0 ? 1 : 0;
            survey.entry(e, key, keyLength, value, valueLength);
        });
        List<Placement> placements = new ArrayList<>();
        for (Alias alias : byPath.values()) {
            OptionalInt flags = alias.flags().isPresent() ? alias.flags() : survey.ofDirectory(alias.directory());
            if (flags.isEmpty()) {
                flags = elfFlags.apply(alias);
            }
            if (flags.isEmpty()) {
                // The container's own C library: a driver library it can load has the same ABI.
                flags = survey.libc();
            }
            if (flags.isEmpty()) {
                return new CacheEdit(bytes, header, plain[0], List.of(), Optional.of(alias));
            }
            placements.add(Placement.find(bytes, header, alias, flags.getAsInt()));
        }
        placements.sort(Placement::compareNew);
        return new CacheEdit(bytes, header, plain[0], List.copyOf(placements), Optional.empty());
    }

    /** An alias whose loader flags nothing told; nothing else is known then. */
    Optional<Alias> withoutFlags() {
        return withoutFlags;
    }

    /** Each alias listed exactly once in its directory, naming its link, with its flags. */
    boolean isCurrent() {
        return withoutFlags.isEmpty() && placements.stream().allMatch(Placement::current);
    }

    CacheLayout layout() {
        return header.layout;
    }

    List<String> dropped() {
        return header.dropped;
    }

    /** The aliases with the flags they were placed with. */
    List<Alias> resolved() {
        return placements.stream().map(p -> p.alias().withFlags(p.flags())).toList();
    }

    /** The size the new file will have; refuses one over MAX_CACHE_BYTES before anything is written. */
    long plannedSize() throws LdCacheFormatException, IOException {
        return rewriter().size();
    }

    /** Writes the new file to {@code sink}; returns its size. */
    long write(CacheOutput.Sink sink) throws LdCacheFormatException, IOException, ErrnoException {
        CacheRewriter rewriter = rewriter();
        rewriter.write(new CacheOutput(sink));
        return rewriter.size();
    }

    private CacheRewriter rewriter() throws LdCacheFormatException, IOException {
        if (withoutFlags.isPresent()) {
            throw new IllegalStateException("no loader flags for " + withoutFlags.get().path());
        }
        return new CacheRewriter(bytes, header, placements, plainEntries);
    }

    /**
     * Reads a written file back as the loader would need it: the whole check again, the same
     * layout, every alias in place. Whatever a bug or a meddler did to it, a file that fails
     * this is never put in place.
     */
    void verifyWritten(ByteSource written) throws LdCacheFormatException, IOException {
        CacheEdit again = read(written, resolved(), a -> OptionalInt.empty());
        if (again.layout() != layout() || !again.isCurrent()) {
            throw new LdCacheFormatException("the rewritten cache does not read back as written (left as it was)");
        }
    }
}
