package io.driveralias.agent.ldcache;

import io.driveralias.agent.core.FailureReason;
import io.driveralias.agent.fs.Directory;
import io.driveralias.agent.fs.Errno;
import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.fs.FileStat;
import io.driveralias.agent.fs.NewFile;
import io.driveralias.agent.fs.ReadableFile;
import io.driveralias.agent.fs.RootFs;
import io.driveralias.agent.repair.Failures;
import java.io.IOException;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * Makes a container's {@code /etc/ld.so.cache} list the aliases the agent made, without
 * running anything in the container (a container's own {@code ldconfig}, run as root, was a
 * way to root for any container user). The cache is read and written through the root's
 * resolver: {@code /etc} may not be a mount point (EXDEV), the cache must be a regular file
 * on the same mount, of bounded size, and is only opened for reading after O_PATH and fstat
 * said so. A symlink, FIFO, directory or device there is reported and left alone; so is a
 * cache the agent will not rewrite (malformed, too big, or too big once written). A container
 * without a cache gets none.
 *
 * <p>The file is streamed ({@link CacheEdit}): an update costs a few small buffers plus what
 * the aliases need, whatever the file holds, so concurrent updates need no bound of their own.
 * The new file is read back and checked before it takes the name, keeps the old one's
 * permission bits and owner, and replaces it by RENAME_EXCHANGE (a hard-linked cache included:
 * the other links keep the old content).
 */
public final class LdCacheUpdater {

    static final String ETC = "/etc";
    static final String CACHE = "ld.so.cache";
    private static final String WHAT = ETC + "/" + CACHE;

    /** Adds or fixes the aliases' entries; writes only when something changes. */
    public LdCacheUpdate update(RootFs root, List<Alias> aliases) {
        return run(root, aliases, true);
    }

    /** Read-only: ALREADY_CURRENT, STALE, NO_CACHE or FAILED. For verification after a repair. */
    public LdCacheUpdate check(RootFs root, List<Alias> aliases) {
        return run(root, aliases, false);
    }

    /**
     * Writes {@code current} with the aliases' entries as {@code ld.so.cache} in {@code etc}:
     * for a container whose root is not mounted yet, {@code current} is the cache of its
     * top-most layer that has one and {@code etc} its writable layer's {@code /etc}. Creates the
     * file (RENAME_NOREPLACE) where {@code etc} has none, replaces it where it has a regular
     * file, and takes mode and owner from {@code current}. Aliases without flags take their
     * directory's in the cache, else libc.so.6's (the driver files are not readable here).
     * ALREADY_CURRENT, with nothing written, when {@code current} lists them all already.
     */
    public LdCacheUpdate seed(ReadableFile current, Directory etc, List<Alias> aliases) {
        try {
            removeLeftovers(etc);
            Optional<FileStat> existing = existing(etc);
            if (existing.isPresent()) {
                LdCacheUpdate refusal = refusal(etc, existing.get());
                if (refusal != null) {
                    return refusal;
                }
            }
            if (current.size() > CacheFormat.MAX_CACHE_BYTES) {
                return tooBig(current.size());
            }
            CacheEdit edit = CacheEdit.read(current, aliases, a -> OptionalInt.empty());
            LdCacheUpdate unchanged = unchangedOutcome(edit, aliases, true);
            if (unchanged != null) {
                return unchanged;
            }
            ReadableFile original = existing.filter(s -> s.sameFile(current.stat())).map(s -> current).orElse(null);
            return write(etc, edit, current.stat(), existing, original);
        } catch (ErrnoException e) {
            return LdCacheUpdate.failed(Failures.reasonOf(e), e.getMessage());
        } catch (LdCacheFormatException e) {
            return notRewritable(e);
        } catch (IOException e) {
            return LdCacheUpdate.failed(FailureReason.IO, WHAT + ": " + e.getMessage());
        }
    }

    private LdCacheUpdate run(RootFs root, List<Alias> aliases, boolean write) {
        try (Directory etc = root.openDirectory(ETC, true)) {
            if (write) {
                removeLeftovers(etc);
            }
            Optional<FileStat> found = existing(etc);
            if (found.isEmpty()) {
                return LdCacheUpdate.of(LdCacheUpdate.Outcome.NO_CACHE, "no " + WHAT + ": none made");
            }
            FileStat stat = found.get();
            LdCacheUpdate refusal = refusal(etc, stat);
            if (refusal != null) {
                return refusal;
            }
            if (stat.size() > CacheFormat.MAX_CACHE_BYTES) {
                return tooBig(stat.size());
            }
            try (ReadableFile file = etc.openFile(CACHE)) {
                if (!file.stat().sameFile(stat) || file.size() > CacheFormat.MAX_CACHE_BYTES) {
                    throw new ErrnoException("open", WHAT + " (replaced while opened)", Errno.EAGAIN);
                }
                CacheEdit edit = CacheEdit.read(file, aliases, a -> elfFlags(root, a));
                LdCacheUpdate unchanged = unchangedOutcome(edit, aliases, write);
                if (unchanged != null) {
                    return unchanged;
                }
                return write(etc, edit, file.stat(), Optional.of(file.stat()), file);
            }
        } catch (ErrnoException e) {
            if (e.is(Errno.ENOENT)) {
                return LdCacheUpdate.of(LdCacheUpdate.Outcome.NO_CACHE, "no " + ETC + ": no cache");
            }
            String message = e.is(Errno.EXDEV)
                    ? ETC + " is a mount point (a directory mounted from the host?): not written"
                    : e.getMessage();
            return LdCacheUpdate.failed(Failures.reasonOf(e), message);
        } catch (LdCacheFormatException e) {
            return notRewritable(e);
        } catch (IOException e) {
            return LdCacheUpdate.failed(FailureReason.IO, WHAT + ": " + e.getMessage());
        }
    }

    /** The outcome when nothing is to be written (flags unknown, already current, a check); null to write. */
    private static LdCacheUpdate unchangedOutcome(CacheEdit edit, List<Alias> aliases, boolean write) {
        if (edit.withoutFlags().isPresent()) {
            return LdCacheUpdate.failed(FailureReason.IO, "cannot tell the loader flags of " + edit.withoutFlags().get().path()
                    + " (no entry of its directory in the cache, no ELF header the agent knows)");
        }
        if (edit.isCurrent()) {
            return LdCacheUpdate.of(LdCacheUpdate.Outcome.ALREADY_CURRENT, aliases.size() + " aliases already listed");
        }
        return write ? null : LdCacheUpdate.of(LdCacheUpdate.Outcome.STALE, "the cache does not list every alias");
    }

    /**
     * Writes the new cache under a temporary name, reads it back, then puts it at {@code CACHE}:
     * in place of {@code replacing} (the file whose bytes {@code original} reads, if it is that
     * one), or as a new name. Mode and owner come from {@code like}.
     */
    private static LdCacheUpdate write(Directory etc, CacheEdit edit, FileStat like, Optional<FileStat> replacing,
                                       ReadableFile original) throws ErrnoException, IOException, LdCacheFormatException {
        edit.plannedSize(); // too big is refused before anything is created
        try (NewFile out = etc.newFile(CACHE)) {
            long size = edit.write(out::write);
            edit.verifyWritten(out);
            if (replacing.isPresent()) {
                out.replace(replacing.get(), original, like.permissions(), like.uid(), like.gid());
            } else {
                out.create(like.permissions(), like.uid(), like.gid());
            }
            return LdCacheUpdate.of(LdCacheUpdate.Outcome.UPDATED, edit.resolved().size() + " aliases listed ("
                    + edit.layout().name().toLowerCase(Locale.ROOT) + " layout, " + size + " bytes)"
                    + (edit.dropped().isEmpty() ? "" : "; dropped " + String.join("; ", edit.dropped())));
        }
    }

    private static Optional<FileStat> existing(Directory etc) throws ErrnoException {
        try {
            return Optional.of(etc.statEntry(CACHE));
        } catch (ErrnoException e) {
            if (e.is(Errno.ENOENT)) {
                return Optional.empty();
            }
            throw e;
        }
    }

    /** Temporaries of an agent killed while writing the cache: litter, removed before any write. */
    private static void removeLeftovers(Directory etc) {
        try {
            etc.removeTemporaryFiles(CACHE);
        } catch (ErrnoException e) {
            // A directory too large to list, or one that vanished: the next update tries again.
        }
    }

    private static LdCacheUpdate notRewritable(LdCacheFormatException e) {
        return LdCacheUpdate.failed(FailureReason.IO, WHAT + " is not a cache the agent can rewrite (left as it is): "
                + e.getMessage());
    }

    private static LdCacheUpdate tooBig(long size) {
        return LdCacheUpdate.failed(FailureReason.IO, WHAT + " is " + size + " bytes (at most "
                + CacheFormat.MAX_CACHE_BYTES + "): not read");
    }

    /** Why the cache is not to be read or replaced; null when it may be. */
    private static LdCacheUpdate refusal(Directory etc, FileStat stat) {
        if (stat.isSymlink()) {
            return LdCacheUpdate.failed(FailureReason.UNSAFE_PATH, WHAT + " is a symlink: not followed, not touched");
        }
        if (!stat.isRegularFile()) {
            return LdCacheUpdate.failed(FailureReason.CONFLICT, WHAT + " is not a regular file (mode "
                    + Integer.toOctalString(stat.mode()) + "): not opened, not touched");
        }
        FileStat dir = etc.stat();
        boolean otherMount = stat.dev() != dir.dev()
                || (stat.mountId() != 0 && dir.mountId() != 0 && stat.mountId() != dir.mountId());
        if (otherMount) {
            return LdCacheUpdate.failed(FailureReason.UNSAFE_PATH, WHAT + " is a mount point (a file mounted from"
                    + " the host?): not touched");
        }
        return null;
    }

    /** Flags from the driver file's ELF header, read in-root; empty if it cannot be read. */
    private static OptionalInt elfFlags(RootFs root, Alias alias) {
        try (ReadableFile file = root.openRegularFile(alias.path())) {
            return LoaderFlags.ofElf(file);
        } catch (ErrnoException | IOException e) {
            // Seen through an overlay's merged directory, a driver file is an empty placeholder.
            return OptionalInt.empty();
        }
    }
}
