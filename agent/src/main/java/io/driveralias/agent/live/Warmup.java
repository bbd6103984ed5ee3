package io.driveralias.agent.live;

import io.driveralias.agent.fs.Directory;
import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.fs.HostRoot;
import io.driveralias.agent.fs.KernelFiles;
import io.driveralias.agent.fs.Libc;
import io.driveralias.agent.fs.NativeIo;
import io.driveralias.agent.fs.OpenFlags;
import io.driveralias.agent.fs.OwnedTree;
import io.driveralias.agent.fs.PathResolver;
import io.driveralias.agent.fs.ReadableFile;
import io.driveralias.agent.fs.RootFs;
import io.driveralias.agent.mount.MountInfoException;
import io.driveralias.agent.mount.MountInfoParser;
import io.driveralias.agent.repair.LocateRequest;
import io.driveralias.agent.repair.RootRepairer;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.LinkOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the repair path at startup on a throw-away root in the agent's own /tmp, so that the
 * first GPU container of the node does not pay for class loading, native call linking and
 * the JIT. The "driver" is a copy of the runtime's own {@code libjsig.so} named like a
 * versioned library: a real ELF file with a SONAME, present in every Java runtime.
 */
final class Warmup {

    private static final Logger LOG = LoggerFactory.getLogger(Warmup.class);
    private static final String VERSION = "1.0.0";
    private static final String PREFIX = "driver-alias-warmup-";
    private static final Set<PosixFilePermission> PRIVATE = PosixFilePermissions.fromString("rwx------");
    /** How long in all the warm-up gives way to containers: past that, a node always busy gets it anyway. */
    private static final java.time.Duration YIELD = java.time.Duration.ofSeconds(30);
    /** About as many mounts as a GPU container has (its driver files, /proc and /dev entries). */
    private static final int CONTAINER_MOUNTS = 48;
    /** Every this many rounds the loader cache is put back as it was, so that the round rewrites it. */
    private static final int CACHE_EVERY = 10;
    /** A distribution's loader cache is tens of KiB; a larger one is not worth warming with. */
    static final int MAX_WARMUP_CACHE = 1 << 20;

    private Warmup() {
    }

    static void run(RootRepairer repairer, PathResolver resolver, int rounds) {
        run(repairer, resolver, rounds, () -> false, Optional.empty());
    }

    /**
     * {@code busy}: real work is waiting or under way. The rounds run beside the watches, on a
     * node whose cores may all be taken: a round never starts while a container waits for the
     * agent (checked every millisecond, for at most {@link #YIELD} in all), so that the first
     * containers after a start do not share the CPU with the agent's own warm-up.
     *
     * <p>{@code loaderCache}: a real loader cache (the host's), put in the throw-away root every
     * {@value #CACHE_EVERY} rounds, so that reading, editing and writing one is warm too. Without
     * it the first GPU container after a start was the first cache the agent ever rewrote: on a
     * loaded node that took 185 to 519 ms, against 40 to 80 ms for the next ones.
     */
    static void run(RootRepairer repairer, PathResolver resolver, int rounds, java.util.function.BooleanSupplier busy,
                    Optional<byte[]> loaderCache) {
        if (rounds <= 0) {
            return;
        }
        long started = System.nanoTime();
        Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
        removeLeftovers(tmp);
        Path root = null;
        try {
            root = privateRoot(tmp);
            Path lib = Files.createDirectories(root.resolve("usr/lib64"));
            Files.copy(Path.of(System.getProperty("java.home"), "lib", "libjsig.so"), lib.resolve("libjsig.so." + VERSION));
            Path cache = Files.createDirectories(root.resolve("etc")).resolve("ld.so.cache");
            LocateRequest request = new LocateRequest(List.of("/usr/lib64"), Optional.of(VERSION),
                    List.of("/usr/lib64/libjsig.so." + VERSION), java.util.Map.of(), false);
            int mountTable = Libc.openHost("/proc/self/mountinfo", OpenFlags.O_RDONLY);
            try {
                // A container's mount table is some dozens of lines; the agent's own, on a busy
                // node, thousands, of which the start path reads one. Parsing all of it each
                // round cost seconds of start-up: the parser warms on a container's worth.
                String sample = firstLines(new String(KernelFiles.readOpen(mountTable, "mountinfo", 4 << 20),
                        StandardCharsets.ISO_8859_1), CONTAINER_MOUNTS);
                byte[] absent = "0 ".getBytes(StandardCharsets.US_ASCII);
                long yieldUntil = System.nanoTime() + YIELD.toNanos();
                for (int i = 0; i < rounds; i++) {
                    while (busy.getAsBoolean() && System.nanoTime() < yieldUntil) {
                        Thread.sleep(1);
                    }
                    if (loaderCache.isPresent() && i % CACHE_EVERY == 0) {
                        Files.write(cache, loaderCache.get());
                    }
                    try (RootFs fs = RootFs.openHostDirectory(root.toString(), resolver)) {
                        repairer.repair(fs, request, RootRepairer.Mode.APPLY);
                    }
                    Files.deleteIfExists(lib.resolve("libjsig.so"));
                    MountInfoParser.parse(sample);
                    if (i % 10 == 0) {
                        // The scan for one mount's line, through the whole table (no mount has id 0).
                        NativeIo.findLine(mountTable, absent, 64 << 10, 4 << 20);
                    }
                }
            } finally {
                Libc.close(mountTable);
            }
            LOG.info("warmed up: {} round(s) of the repair path in {} ms", rounds, (System.nanoTime() - started) / 1_000_000);
        } catch (IOException | ErrnoException | MountInfoException | RuntimeException e) {
            // Only speed is at stake: the agent works the same without it.
            LOG.debug("warm-up skipped: {}", e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            if (root != null) {
                remove(tmp, root.getFileName().toString());
            }
        }
    }

    /**
     * The host's own loader cache ({@code /etc/ld.so.cache} inside the host's root, reached as
     * {@link HostRoot} reaches it), read whole up to {@link #MAX_WARMUP_CACHE}; empty where there
     * is none. Only the warm-up's speed depends on it.
     */
    static Optional<byte[]> hostLoaderCache(String hostProc, PathResolver resolver) {
        try (RootFs host = HostRoot.openOnce(hostProc, resolver);
             ReadableFile cache = host.openRegularFile("/etc/ld.so.cache")) {
            long size = cache.size();
            if (size == 0 || size > MAX_WARMUP_CACHE) {
                return Optional.empty();
            }
            byte[] bytes = new byte[(int) size];
            cache.readFully(0, bytes, bytes.length);
            return Optional.of(bytes);
        } catch (ErrnoException | IOException | RuntimeException e) {
            LOG.debug("warm-up without a loader cache: {}", e.toString());
            return Optional.empty();
        }
    }

    /** The first {@code count} lines of a text. */
    static String firstLines(String text, int count) {
        int end = 0;
        for (int i = 0; i < count && end < text.length(); i++) {
            int newline = text.indexOf('\n', end);
            end = newline < 0 ? text.length() : newline + 1;
        }
        return text.substring(0, end);
    }

    /**
     * Who made a warm-up directory: this process's pid and the kernel's start time of it, so that
     * another agent on the same host (a second instance, one of a test run) leaves it alone while
     * this process lives, and removes it once it does not.
     */
    private static String ownerTag() {
        long pid = ProcessHandle.current().pid();
        return pid + "-" + startTicks(pid).orElse(0L);
    }

    /** Whether {@code name} is a warm-up directory of a process that still runs (the same pid and start). */
    static boolean ofALivingAgent(String name) {
        String[] parts = name.substring(PREFIX.length()).split("-", -1);
        if (parts.length < 3 || !parts[0].matches("[0-9]{1,10}") || !parts[1].matches("[0-9]{1,19}")) {
            // An older agent's name: it says no owner, and was removed at every start as it still is.
            return false;
        }
        long pid = Long.parseLong(parts[0]);
        return startTicks(pid).map(t -> t == Long.parseLong(parts[1])).orElse(false);
    }

    /** The kernel's start time of a process of this host, in clock ticks since boot. */
    private static Optional<Long> startTicks(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"), StandardCharsets.ISO_8859_1);
            return Optional.of(io.driveralias.agent.fs.ProcessStartTime.startTicks(stat));
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /**
     * A new directory that only the agent can enter (0700, made by the agent and checked): on a
     * host install {@code /tmp} is shared, and everything below this directory is then handled
     * by path without another user being able to swap anything in it.
     */
    static Path privateRoot(Path tmp) throws IOException {
        Path root = Files.createTempDirectory(tmp, PREFIX + ownerTag() + "-", PosixFilePermissions.asFileAttribute(PRIVATE));
        boolean ours = false;
        try {
            ours = Files.getPosixFilePermissions(root, LinkOption.NOFOLLOW_LINKS).equals(PRIVATE)
                    && Files.getAttribute(root, "unix:uid", LinkOption.NOFOLLOW_LINKS).equals(Libc.geteuid());
        } finally {
            if (!ours) {
                remove(tmp, root.getFileName().toString());
            }
        }
        if (!ours) {
            throw new IOException(root + " is not a private directory of this process");
        }
        return root;
    }

    /**
     * Directories an earlier agent left when it was killed during its own warm-up. Only
     * directories the agent's own uid owns, removed through directory fds (see {@link OwnedTree}):
     * a local user who plants a {@code driver-alias-warmup-*} directory, or swaps a subdirectory
     * for a symlink during the removal, cannot make it delete anything else.
     */
    static void removeLeftovers(Path tmp) {
        try (Directory dir = Directory.openHost(tmp.toString())) {
            int uid = Libc.geteuid();
            for (Libc.RawDirent entry : dir.names()) {
                if (entry.name().startsWith(PREFIX) && !ofALivingAgent(entry.name())) {
                    OwnedTree.remove(dir, entry.name(), uid);
                }
            }
        } catch (ErrnoException | RuntimeException e) {
            LOG.debug("warm-up leftovers not removed: {}", e.toString());
        }
    }

    private static void remove(Path tmp, String name) {
        try (Directory dir = Directory.openHost(tmp.toString())) {
            OwnedTree.remove(dir, name, Libc.geteuid());
        } catch (ErrnoException | RuntimeException e) {
            LOG.debug("warm-up root not removed: {}", e.toString());
        }
    }
}
