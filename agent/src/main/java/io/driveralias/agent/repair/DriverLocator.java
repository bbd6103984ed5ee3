package io.driveralias.agent.repair;

import io.driveralias.agent.core.DriverLibrary;
import io.driveralias.agent.core.DriverVersions;
import io.driveralias.agent.core.FailureReason;
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
import io.driveralias.agent.fs.RootFs;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * Finds the driver's versioned files in a root and their SONAMEs. Injected files (from
 * mountinfo) come first, then every {@code lib*.so.<version>} in the library directories. A
 * directory reached twice (through {@code /lib64 -> usr/lib64}, say) is scanned once, under the
 * first name it was reached by. In a container only the host's own driver files count
 * ({@link HostDriverFiles}), and their SONAMEs are the host copy's; in a root the operator named
 * ({@code repair --root}) its own files of the driver's version do, and each file's ELF is read.
 */
public final class DriverLocator {

    private final SonameCache cache;
    private final HostRoot host;
    private final HostDriverFiles hostFiles;

    public DriverLocator(SonameCache cache, HostRoot host, HostDriverFiles hostFiles) {
        this.cache = cache;
        this.host = host;
        this.hostFiles = hostFiles;
    }

    private record FoundDirectory(String path, FileStat stat, Set<String> names, Set<String> leftovers) {
    }

    public DriverInventory locate(RootFs root, LocateRequest request) throws ErrnoException {
        List<Problem> problems = new ArrayList<>();
        Map<String, FoundDirectory> byIdentity = new LinkedHashMap<>();
        Set<String> injectedNames = new LinkedHashSet<>();
        for (String file : request.injectedFiles()) {
            String name = FileNames.baseName(file);
            FoundDirectory dir = directory(root, FileNames.dirName(file), false, byIdentity, problems);
            if (dir != null && FileNames.versionOf(name).isPresent()) {
                dir.names().add(name);
                injectedNames.add(name);
            }
        }
        for (String path : request.libraryDirectories()) {
            directory(root, path, true, byIdentity, problems);
        }
        Optional<String> version = Optional.empty();
        if (!request.hostFilesOnly()) {
            Set<String> allNames = new LinkedHashSet<>();
            byIdentity.values().forEach(d -> allNames.addAll(d.names()));
            version = request.driverVersion()
                    .or(() -> DriverVersions.detect(injectedNames))
                    .or(() -> DriverVersions.detect(allNames));
        }
        Map<String, List<LocatedLibrary>> found = new LinkedHashMap<>();
        Set<String> versions = new TreeSet<>(DriverVersions::compareVersions);
        if (version.isPresent() || request.hostFilesOnly()) {
            for (FoundDirectory dir : byIdentity.values()) {
                List<LocatedLibrary> libraries = readLibraries(root, dir, version, request, problems, versions);
                if (!libraries.isEmpty()) {
                    found.put(dir.path(), libraries);
                }
            }
        }
        Map<String, Set<String>> leftovers = new LinkedHashMap<>();
        byIdentity.values().stream().filter(d -> !d.leftovers().isEmpty())
                .forEach(d -> leftovers.put(d.path(), d.leftovers()));
        Optional<String> foundVersion = request.hostFilesOnly()
                ? versions.stream().reduce((older, newer) -> newer) : version;
        return new DriverInventory(found.isEmpty() ? Optional.empty() : foundVersion, found, problems, leftovers);
    }
    /** Opens and (if asked) lists a directory; a missing one is simply not there. */
    private static FoundDirectory directory(RootFs root, String path, boolean list,
                                            Map<String, FoundDirectory> byIdentity, List<Problem> problems)
            throws ErrnoException {
        try (Directory dir = root.openDirectory(path, false)) {
            String identity = dir.stat().dev() + ":" + dir.stat().inode();
            FoundDirectory found = byIdentity.computeIfAbsent(identity,
                    k -> new FoundDirectory(path, dir.stat(), new LinkedHashSet<>(), new LinkedHashSet<>()));
            if (list) {
                for (Libc.RawDirent entry : dir.names()) {
                    if (FileNames.versionOf(entry.name()).isPresent()) {
                        found.names().add(entry.name());
                    } else if (entry.type() == Libc.RawDirent.DT_LNK && RootFs.isTemporaryName(entry.name())) {
                        found.leftovers().add(entry.name());
                    }
                }
            }
            return found;
        } catch (ErrnoException e) {
            if (e.is(Errno.ENOENT) || e.is(Errno.ENOTDIR)) {
                return null;
            }
            if (e.is(Errno.ESRCH)) {
                throw e;
            }
            problems.add(new Problem(path, Failures.reasonOf(e), e.getMessage()));
            return null;
        }
    }

    private List<LocatedLibrary> readLibraries(RootFs root, FoundDirectory found, Optional<String> version,
                                               LocateRequest request, List<Problem> problems, Set<String> versions)
            throws ErrnoException {
        List<LocatedLibrary> libraries = new ArrayList<>();
        try (Directory dir = root.openDirectory(found.path(), false)) {
            if (!dir.stat().sameFile(found.stat())) {
                problems.add(new Problem(found.path(), FailureReason.UNSAFE_PATH, "directory was swapped while scanning"));
                return libraries;
            }
            for (String name : found.names()) {
                boolean candidate = request.hostFilesOnly() ? FileNames.hasDriverVersion(name)
                        : FileNames.isDriverFile(name, version.orElseThrow());
                if (!candidate) {
                    continue;
                }
                String path = found.path() + "/" + name;
                try {
                    FileStat stat = dir.statEntry(name);
                    String hostSource = request.hostSources().get(path);
                    Optional<String> soname;
                    if (request.hostFilesOnly()) {
                        // The host's own file, or nothing: an image's copy, a file the container
                        // mounted itself, a volume named like a library directory.
                        Optional<HostDriverFiles.HostDriverFile> own = hostFiles.identify(
                                hostSource != null ? host.stat(hostSource) : stat, name);
                        own.ifPresent(f -> versions.add(f.version()));
                        soname = own.map(HostDriverFiles.HostDriverFile::soname);
                    } else {
                        soname = soname(dir, name, hostSource);
                    }
                    soname.ifPresent(s -> libraries.add(
                            new LocatedLibrary(new DriverLibrary(found.path(), name, s), stat)));
                } catch (ErrnoException e) {
                    if (e.is(Errno.ESRCH)) {
                        throw e;
                    }
                    if (!e.is(Errno.ENOENT) && !request.hostFilesOnly()) {
                        problems.add(new Problem(path, Failures.reasonOf(e), e.getMessage()));
                    }
                } catch (ElfFormatException | IOException e) {
                    problems.add(new Problem(path, FailureReason.IO, "cannot read SONAME: " + e.getMessage()));
                }
            }
        }
        return libraries;
    }

    /** The SONAME of a driver file of a root the operator named: from the file in the root, or from its host source. */
    private Optional<String> soname(Directory dir, String name, String hostSource)
            throws ErrnoException, ElfFormatException, IOException {
        try (ReadableFile file = hostSource != null ? host.openRegularFile(hostSource) : dir.openFile(name)) {
            Optional<Optional<String>> cached = cache.get(file.stat());
            if (cached.isPresent()) {
                return cached.get();
            }
            Optional<String> soname = ElfReader.readSoname(file);
            cache.put(file.stat(), soname);
            return soname;
        }
    }
}
