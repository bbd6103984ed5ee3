package io.driveralias.agent.ldcache;

import io.driveralias.agent.core.FailureReason;
import io.driveralias.agent.fs.Directory;
import io.driveralias.agent.fs.Errno;
import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.fs.FileStat;
import io.driveralias.agent.fs.ReadableFile;
import io.driveralias.agent.fs.RootFs;
import io.driveralias.agent.repair.Failures;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.OptionalInt;

/**
 * Makes a container's {@code /etc/ld.so.cache} list the aliases the agent made, without
 * running anything in the container (a container's own {@code ldconfig}, run as root, was a
 * way to root for any container user). The cache is read and written through the root's
 * resolver: {@code /etc} may not be a mount point (EXDEV), the cache must be a regular file
 * on the same mount, of bounded size, and is only opened for reading after O_PATH and fstat
 * said so. A symlink, FIFO, directory or device there is reported and left alone; so is a
 * cache the codec cannot read. A container without a cache gets none.
 */
public final class LdCacheUpdater {

    static final String ETC = "/etc";
    static final String CACHE = "ld.so.cache";
    private static final int MODE = 0644;

    /** Adds or fixes the aliases' entries; writes only when something changes. */
    public LdCacheUpdate update(RootFs root, List<Alias> aliases) {
        return run(root, aliases, true);
    }

    /** Read-only: ALREADY_CURRENT, STALE, NO_CACHE or FAILED. For verification after a repair. */
    public LdCacheUpdate check(RootFs root, List<Alias> aliases) {
        return run(root, aliases, false);
    }

    private LdCacheUpdate run(RootFs root, List<Alias> aliases, boolean write) {
        try (Directory etc = root.openDirectory(ETC, true)) {
            FileStat stat;
            try {
                stat = etc.statEntry(CACHE);
            } catch (ErrnoException e) {
                if (e.is(Errno.ENOENT)) {
                    return LdCacheUpdate.of(LdCacheUpdate.Outcome.NO_CACHE, "no " + ETC + "/" + CACHE + ": none made");
                }
                throw e;
            }
            LdCacheUpdate refusal = refusal(etc, stat);
            if (refusal != null) {
                return refusal;
            }
            LdCache cache;
            try {
                cache = LdCacheCodec.parse(read(etc, stat));
            } catch (LdCacheFormatException e) {
                return LdCacheUpdate.failed(FailureReason.IO, ETC + "/" + CACHE + " is not a cache the agent can rewrite"
                        + " (left as it is): " + e.getMessage());
            }
            List<Alias> resolved = new ArrayList<>();
            for (Alias alias : aliases) {
                OptionalInt flags = flagsFor(root, cache, alias);
                if (flags.isEmpty()) {
                    return LdCacheUpdate.failed(FailureReason.IO, "cannot tell the loader flags of " + alias.path()
                            + " (no entry of its directory in the cache, no ELF header the agent knows)");
                }
                resolved.add(alias.withFlags(flags.getAsInt()));
            }
            if (cache.isCurrent(resolved)) {
                return LdCacheUpdate.of(LdCacheUpdate.Outcome.ALREADY_CURRENT, aliases.size() + " aliases already listed");
            }
            if (!write) {
                return LdCacheUpdate.of(LdCacheUpdate.Outcome.STALE, "the cache does not list every alias");
            }
            byte[] bytes = LdCacheCodec.serialize(cache.withAliases(resolved));
            etc.replaceFile(CACHE, bytes, MODE, stat.uid(), stat.gid(), stat);
            return LdCacheUpdate.of(LdCacheUpdate.Outcome.UPDATED, aliases.size() + " aliases listed ("
                    + cache.layout().name().toLowerCase(Locale.ROOT) + " layout, " + bytes.length + " bytes)"
                    + (cache.dropped().isEmpty() ? "" : "; dropped " + String.join("; ", cache.dropped())));
        } catch (ErrnoException e) {
            if (e.is(Errno.ENOENT)) {
                return LdCacheUpdate.of(LdCacheUpdate.Outcome.NO_CACHE, "no " + ETC + ": no cache");
            }
            String message = e.is(Errno.EXDEV)
                    ? ETC + " is a mount point (a directory mounted from the host?): not written"
                    : e.getMessage();
            return LdCacheUpdate.failed(Failures.reasonOf(e), message);
        } catch (LdCacheFormatException | IOException e) {
            return LdCacheUpdate.failed(FailureReason.IO, ETC + "/" + CACHE + ": " + e.getMessage());
        }
    }

    /** Why the cache is not to be read or replaced; null when it may be. */
    private static LdCacheUpdate refusal(Directory etc, FileStat stat) {
        String what = ETC + "/" + CACHE;
        if (stat.isSymlink()) {
            return LdCacheUpdate.failed(FailureReason.UNSAFE_PATH, what + " is a symlink: not followed, not touched");
        }
        if (!stat.isRegularFile()) {
            return LdCacheUpdate.failed(FailureReason.CONFLICT, what + " is not a regular file (mode "
                    + Integer.toOctalString(stat.mode()) + "): not opened, not touched");
        }
        FileStat dir = etc.stat();
        boolean otherMount = stat.dev() != dir.dev()
                || (stat.mountId() != 0 && dir.mountId() != 0 && stat.mountId() != dir.mountId());
        if (otherMount) {
            return LdCacheUpdate.failed(FailureReason.UNSAFE_PATH, what + " is a mount point (a file mounted from"
                    + " the host?): not touched");
        }
        if (stat.size() > LdCacheCodec.MAX_CACHE_BYTES) {
            return LdCacheUpdate.failed(FailureReason.IO, what + " is " + stat.size() + " bytes (at most "
                    + LdCacheCodec.MAX_CACHE_BYTES + "): not read");
        }
        return null;
    }

    /** The bytes of the very file {@code stat} described; a swap in between is refused. */
    private static byte[] read(Directory etc, FileStat stat) throws ErrnoException, IOException {
        try (ReadableFile file = etc.openFile(CACHE)) {
            if (!file.stat().sameFile(stat) || file.size() > LdCacheCodec.MAX_CACHE_BYTES) {
                throw new ErrnoException("open", ETC + "/" + CACHE + " (replaced while opened)", Errno.EAGAIN);
            }
            byte[] bytes = new byte[(int) file.size()];
            file.readFully(0, bytes, bytes.length);
            return bytes;
        }
    }

    /** The alias's own flags, else its directory's in the cache, else its driver file's ELF header. */
    private static OptionalInt flagsFor(RootFs root, LdCache cache, Alias alias) {
        if (alias.flags().isPresent()) {
            return alias.flags();
        }
        OptionalInt fromDirectory = cache.flagsOfDirectory(alias.directory());
        if (fromDirectory.isPresent()) {
            return fromDirectory;
        }
        try (ReadableFile file = root.openRegularFile(alias.path())) {
            OptionalInt fromElf = LoaderFlags.ofElf(file);
            if (fromElf.isPresent()) {
                return fromElf;
            }
        } catch (ErrnoException | IOException e) {
            // Seen through an overlay's merged directory, a driver file is an empty placeholder.
        }
        // The container's own C library: a driver library it can load has the same ABI.
        return cache.entries().stream().filter(e -> e.key().equals("libc.so.6"))
                .mapToInt(CacheEntry::flags).findFirst();
    }
}
