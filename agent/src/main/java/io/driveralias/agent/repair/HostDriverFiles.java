package io.driveralias.agent.repair;

import io.driveralias.agent.core.DriverVersions;
import io.driveralias.agent.core.FileNames;
import io.driveralias.agent.elf.ElfFormatException;
import io.driveralias.agent.elf.ElfReader;
import io.driveralias.agent.fs.Directory;
import io.driveralias.agent.fs.Errno;
import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.fs.FileStat;
import io.driveralias.agent.fs.HostRoot;
import io.driveralias.agent.fs.Libc;
import io.driveralias.agent.fs.ReadableFile;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver's files as the host has them: what the agent found itself, through its access to
 * the host's root, in the host's library directories. A file in a container is the driver's
 * only if it is one of these, the same device and inode (a bind mount keeps both), never by its
 * name or the shape of its path: a container can name any file of its own {@code libcuda.so.535.104.05}
 * and mount it from a directory called {@code x86_64-linux-gnu}, but it cannot make its file the
 * host's. The SONAME of each file is read here, once, from the host's own copy.
 *
 * <p>Scanned at the first question and again, at most every {@link #RESCAN_INTERVAL_NANOS}, when
 * a file with a driver-shaped name is not among them (the driver was upgraded on the node), and,
 * while none was found, when {@link #foundCount()} is asked (each scrape): a driver that a GPU
 * Operator's driver container installs after the agent started is then seen within a rescan
 * interval, and the metric says so, even before a GPU container comes.
 */
public final class HostDriverFiles {

    private static final Logger LOG = LoggerFactory.getLogger(HostDriverFiles.class);
    static final long RESCAN_INTERVAL_NANOS = 30_000_000_000L;
    /** Subdirectories where distributions keep the driver (Debian: {@code nvidia/current}, {@code nvidia/tesla-535}). */
    private static final String DRIVER_SUBDIRECTORY = "nvidia";

    /** One of the host's driver files: where the agent found it, its name, version and SONAME. */
    public record HostDriverFile(String hostPath, String name, String version, String soname) {
    }

    private record Identity(long dev, long inode) {
    }

    private final HostRoot host;
    private final List<String> directories;
    private final Optional<String> configuredVersion;
    private final LongSupplier nanoTime;
    private final Consumer<String> versionFound;
    /** Driver-named regular files met in containers that are none of the host's: see {@link #unmatched()}. */
    private final AtomicLong unmatched = new AtomicLong();
    private volatile Map<Identity, HostDriverFile> files;
    /** Every host path through which the last scan found one of them, for {@link #knownPath}. */
    private volatile Set<String> paths = Set.of();
    private volatile Optional<String> version = Optional.empty();
    private volatile Set<String> userSpace = Set.of();
    /** The loaded kernel module's version: the host's files of it are the driver, where it has them. */
    private final Supplier<Optional<String>> moduleVersion;
    private long scannedAt;

    /**
     * @param directories       the host's library directories, in order
     * @param configuredVersion {@code --driver-version} or the loaded kernel module's; else detected from the files
     */
    public HostDriverFiles(HostRoot host, List<String> directories, Optional<String> configuredVersion) {
        this(host, directories, configuredVersion, version -> {
        });
    }

    /** @param versionFound told the driver version whenever a scan finds one that differs from before */
    public HostDriverFiles(HostRoot host, List<String> directories, Optional<String> configuredVersion,
                           Consumer<String> versionFound) {
        this(host, directories, configuredVersion, Optional::empty, System::nanoTime, versionFound);
    }

    HostDriverFiles(HostRoot host, List<String> directories, Optional<String> configuredVersion, LongSupplier nanoTime) {
        this(host, directories, configuredVersion, Optional::empty, nanoTime, version -> {
        });
    }

    /**
     * @param configuredVersion {@code --driver-version}: only the host's files of that version count
     * @param moduleVersion     the loaded kernel module's version, asked at each scan: the host's
     *                          files of it are the driver where it has them; where it has none (the
     *                          driver's packages upgraded and the module not reloaded), the files it
     *                          has are, and {@link #userSpaceVersions} tells the mismatch
     */
    public HostDriverFiles(HostRoot host, List<String> directories, Optional<String> configuredVersion,
                           Supplier<Optional<String>> moduleVersion, LongSupplier nanoTime, Consumer<String> versionFound) {
        this.host = host;
        this.directories = List.copyOf(directories);
        this.configuredVersion = configuredVersion;
        this.moduleVersion = moduleVersion;
        this.nanoTime = nanoTime;
        this.versionFound = versionFound;
    }

    /** The host's driver file that {@code stat} describes, if it is one. */
    public Optional<HostDriverFile> identify(FileStat stat, String name) {
        if (!stat.isRegularFile()) {
            return Optional.empty();
        }
        Identity identity = new Identity(stat.dev(), stat.inode());
        HostDriverFile known = current().get(identity);
        if (known == null && FileNames.hasDriverVersion(name)) {
            if (rescanDue()) {
                known = current().get(identity);
            }
            if (known == null) {
                unmatched.incrementAndGet();
            }
        }
        return Optional.ofNullable(known);
    }

    /** The host's driver file {@code stat} describes, as last found: no rescan, nothing counted (a second look at a file). */
    public Optional<HostDriverFile> known(FileStat stat) {
        return Optional.ofNullable(current().get(new Identity(stat.dev(), stat.inode())));
    }

    /**
     * How many driver files the host has, as last found; while that is none, looked for again if
     * the last scan is a rescan interval old. 0 means the agent can repair no container.
     */
    public int foundCount() {
        Map<Identity, HostDriverFile> known = current();
        if (known.isEmpty() && rescanDue()) {
            known = current();
        }
        return known.size();
    }

    /**
     * Driver-named regular files met in containers (their library directories, the files their
     * runtime mounted) that were none of the host's driver files, since the agent started: an
     * image's own copy, or, while the host seems to have none, the files of a driver installed
     * where the agent does not look. Counted each time one is met.
     */
    public long unmatched() {
        return unmatched.get();
    }

    /**
     * Every version of the driver's user-space files the host has (those of {@code libcuda} and
     * {@code libnvidia-ml}), as last found, whatever the agent repairs with: what the kernel
     * module's version is compared with.
     */
    public Set<String> userSpaceVersions() {
        current();
        return userSpace;
    }

    /**
     * Looks at the host's directories again if the last look is a rescan interval old: a driver
     * upgraded, installed or removed since shows without waiting for a GPU container. True if it did.
     */
    public boolean refresh() {
        current();
        return rescanDue();
    }

    /** The directories scanned for the driver's files, in order: for messages that say where the agent looked. */
    public List<String> directories() {
        return directories;
    }

    /** The host's driver file a host path leads to (a declared bind's source), if it is one. */
    public Optional<HostDriverFile> atHostPath(String hostPath) {
        try {
            return identify(host.stat(hostPath), FileNames.baseName(hostPath));
        } catch (ErrnoException e) {
            return Optional.empty();
        }
    }

    /**
     * Whether {@code hostPath}, as a string, is a path where the last scan found one of the host's
     * driver files. No I/O and no scan, ever: for a thread that must not block on a filesystem
     * (the runtime's NRI calls). False before the first scan, and for any other path to the same
     * file, which only {@link #atHostPath} recognises.
     */
    public boolean knownPath(String hostPath) {
        return paths.contains(hostPath);
    }

    /** The driver version of the host's files (the configured one, else the one they carry). */
    public Optional<String> driverVersion() {
        current();
        return version;
    }

    /** What the host's driver is, for a log line: "4 files of version 535.104.05 in /usr/lib/x86_64-linux-gnu". */
    public String summary() {
        Collection<HostDriverFile> all = all();
        if (all.isEmpty()) {
            return "no driver files found";
        }
        return all.size() + " files of version " + version.orElse("?") + " in "
                + all.stream().map(f -> FileNames.dirName(f.hostPath())).distinct().sorted().toList();
    }

    /** Every driver file found on the host. */
    public Collection<HostDriverFile> all() {
        return current().values();
    }

    private Map<Identity, HostDriverFile> current() {
        Map<Identity, HostDriverFile> known = files;
        if (known == null) {
            synchronized (this) {
                if (files == null) {
                    scan();
                }
                known = files;
            }
        }
        return known;
    }

    /** Scans again if the last scan is old enough; true if it did. */
    private synchronized boolean rescanDue() {
        if (nanoTime.getAsLong() - scannedAt < RESCAN_INTERVAL_NANOS) {
            return false;
        }
        scan();
        return true;
    }

    private synchronized void scan() {
        scannedAt = nanoTime.getAsLong();
        Map<String, FileStat> candidates = new LinkedHashMap<>();
        for (String directory : directories) {
            list(directory, candidates, true);
        }
        DriverVersions.HostVersions hostVersions = DriverVersions.onHost(
                candidates.keySet().stream().map(FileNames::baseName).toList(), configuredVersion, moduleVersion.get());
        Set<String> versions = hostVersions.accepted();
        Map<Identity, HostDriverFile> found = new HashMap<>();
        Map<Identity, HostDriverFile> before = files == null ? Map.of() : files;
        candidates.forEach((path, stat) -> {
            String name = FileNames.baseName(path);
            Identity identity = new Identity(stat.dev(), stat.inode());
            Optional<String> fileVersion = FileNames.versionOf(name).filter(versions::contains);
            if (fileVersion.isEmpty() || found.containsKey(identity)) {
                return;
            }
            HostDriverFile old = before.get(identity);
            Optional<String> soname = old != null ? Optional.of(old.soname()) : soname(path);
            soname.filter(FileNames::isPlainName)
                    .ifPresent(s -> found.put(identity, new HostDriverFile(path, name, fileVersion.get(), s)));
        });
        Optional<String> v = found.values().stream().map(HostDriverFile::version)
                .max(DriverVersions::compareVersions);
        Optional<String> newVersion = found.isEmpty() ? configuredVersion : v;
        if (files == null || found.isEmpty() != before.isEmpty() || !newVersion.equals(version)) {
            if (found.isEmpty()) {
                LOG.warn("no NVIDIA driver files{} in the host's library directories {} (through {}): no container"
                        + " is repaired until they appear; name the driver's directory with --host-lib-dir",
                        v.map(x -> " of version " + x).orElse(""), directories, host.describe());
            } else {
                // The first finding is the daemon's to announce (in its start line); a change is news.
                LOG.atLevel(files == null ? org.slf4j.event.Level.DEBUG : org.slf4j.event.Level.INFO)
                        .log("the host's driver: {} files of version(s) {} (through {})", found.size(),
                                found.values().stream().map(HostDriverFile::version).distinct().sorted().toList(),
                                host.describe());
            }
        }
        boolean versionChanged = newVersion.isPresent() && !newVersion.equals(version);
        version = newVersion;
        Set<String> foundPaths = new HashSet<>();
        candidates.forEach((path, stat) -> {
            if (found.containsKey(new Identity(stat.dev(), stat.inode()))) {
                foundPaths.add(path);
            }
        });
        paths = Set.copyOf(foundPaths);
        userSpace = hostVersions.userSpace();
        files = Map.copyOf(found);
        if (versionChanged) {
            // build_info follows a driver installed or upgraded after the agent started.
            versionFound.accept(newVersion.get());
        }
    }

    /** Versioned files of a directory (and of its {@code nvidia/*} subdirectories), a final symlink followed. */
    private void list(String directory, Map<String, FileStat> candidates, boolean withSubdirectories) {
        List<String> subdirectories = new ArrayList<>();
        try (Directory dir = host.openDirectory(directory)) {
            for (Libc.RawDirent entry : dir.names()) {
                String path = directory + "/" + entry.name();
                if (FileNames.hasDriverVersion(entry.name())) {
                    try {
                        FileStat stat = host.stat(path);
                        if (stat.isRegularFile()) {
                            candidates.putIfAbsent(path, stat);
                        }
                    } catch (ErrnoException e) {
                        // A dangling alternative link: not a file of the driver.
                    }
                } else if (withSubdirectories && entry.name().equals(DRIVER_SUBDIRECTORY)) {
                    subdirectories.add(path);
                }
            }
        } catch (ErrnoException e) {
            if (!e.is(Errno.ENOENT) && !e.is(Errno.ENOTDIR)) {
                LOG.debug("host library directory {} not read: {}", directory, e.getMessage());
            }
            return;
        }
        for (String nvidia : subdirectories) {
            try (Directory dir = host.openDirectory(nvidia)) {
                for (Libc.RawDirent entry : dir.names()) {
                    if (!entry.name().startsWith(".")) {
                        list(nvidia + "/" + entry.name(), candidates, false);
                    }
                }
            } catch (ErrnoException e) {
                LOG.debug("host directory {} not read: {}", nvidia, e.getMessage());
            }
        }
    }

    private Optional<String> soname(String hostPath) {
        try (ReadableFile file = host.openRegularFile(hostPath)) {
            return ElfReader.readSoname(file);
        } catch (ErrnoException | ElfFormatException | IOException e) {
            LOG.debug("host driver file {}: no SONAME read: {}", hostPath, e.getMessage());
            return Optional.empty();
        }
    }
}
