package io.driveralias.agent.loader;

import io.driveralias.agent.core.DirEntry;
import io.driveralias.agent.core.DriverLibrary;
import io.driveralias.agent.core.DriverLoad;
import io.driveralias.agent.core.EntryKind;
import io.driveralias.agent.core.FileNames;
import io.driveralias.agent.elf.CudaCompatNote;
import io.driveralias.agent.elf.ElfFormatException;
import io.driveralias.agent.fs.Directory;
import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.fs.FileStat;
import io.driveralias.agent.fs.Libc;
import io.driveralias.agent.fs.ReadableFile;
import io.driveralias.agent.fs.RootFs;
import io.driveralias.agent.ldcache.LoaderLookup;
import io.driveralias.agent.repair.HostDriverFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Which file a root's loader takes for each of the driver's libraries, the way glibc's loader
 * looks for a name without a slash: the root's {@code /etc/ld.so.cache} (whose order ldconfig made
 * from {@code ld.so.conf} and {@code ld.so.conf.d}, NVIDIA's {@code 00-compat-*.conf} first), then
 * its default directories, then the directories the runtime put the driver's files in (reached
 * through {@code LD_LIBRARY_PATH} in the images that use them, which this does not read). Each file
 * is followed through its links inside the root and told apart: one of the node's driver files (the
 * repair found it there, or it is one of the host's by identity), CUDA's forward-compatibility
 * libraries (a {@code compat} directory, with NVIDIA's note where libcuda has one), or an image's own.
 *
 * <p>Read only, in-root, bounded: one pass over the cache, a few stats and link reads per library,
 * the note of one compat libcuda, and {@code /etc/ld.so.conf.d}'s names only when compat libraries
 * are met. Nothing is written.
 */
public final class LoaderView {

    /** The libraries every driver install has: asked about when the container holds none of the host's. */
    static final List<String> ANCHORS = List.of("libcuda.so.1", "libnvidia-ml.so.1");
    private static final int MAX_LIBRARIES = 32;
    private static final int MAX_HOPS = 16;
    private static final int MAX_CONF_FILES = 4;
    private static final int MAX_CONF_BYTES = 4096;
    private static final String CONF_D = "/etc/ld.so.conf.d";

    private final HostDriverFiles hostFiles;
    private final List<String> defaultDirectories;

    /** @param hostFiles the host's own driver files: a file with the identity of one of them is the node's */
    public LoaderView(HostDriverFiles hostFiles) {
        this(hostFiles, defaultDirectories(System.getProperty("os.arch")));
    }

    LoaderView(HostDriverFiles hostFiles, List<String> defaultDirectories) {
        this.hostFiles = hostFiles;
        this.defaultDirectories = List.copyOf(defaultDirectories);
    }

    /**
     * The loader's default directories: Debian's multiarch ones and the lib64 ones of the Red Hat
     * family, then the plain ones. An image has the ones of its own glibc; the others are absent.
     */
    static List<String> defaultDirectories(String arch) {
        String triplet = switch (arch) {
            case "aarch64", "arm64" -> "aarch64-linux-gnu";
            default -> "x86_64-linux-gnu";
        };
        return List.of("/lib/" + triplet, "/usr/lib/" + triplet, "/lib64", "/usr/lib64", "/lib", "/usr/lib");
    }

    /**
     * What {@code root}'s loader takes for the driver's libraries.
     *
     * @param located   the node's driver files the repair found in the root (their paths there)
     * @param reference the version the node's driver must have (its kernel module's)
     */
    public DriverLoad look(RootFs root, List<DriverLibrary> located, Optional<String> reference) {
        Map<String, FileStat> nodeFiles = new LinkedHashMap<>();
        Set<String> names = new LinkedHashSet<>();
        Set<String> driverDirectories = new LinkedHashSet<>();
        for (DriverLibrary l : located) {
            String path = join(l.directory(), l.fileName());
            stat(root, path, false).ifPresent(s -> nodeFiles.put(path, s));
            driverDirectories.add(l.directory());
            if (!l.soname().equals(l.fileName()) && names.size() < MAX_LIBRARIES) {
                names.add(l.soname());
            }
        }
        if (names.isEmpty()) {
            names.addAll(ANCHORS);
        }
        LoaderLookup.Answer cache = LoaderLookup.lookup(root, names);
        Compats compats = new Compats(root);
        List<DriverLoad.Loaded> loaded = new ArrayList<>();
        for (String name : names) {
            loaded.add(find(root, name, cache, nodeFiles, driverDirectories, compats));
        }
        return DriverLoad.judge(loaded, reference);
    }

    private DriverLoad.Loaded find(RootFs root, String name, LoaderLookup.Answer cache, Map<String, FileStat> nodeFiles,
                                   Set<String> driverDirectories, Compats compats) {
        List<String[]> candidates = new ArrayList<>();
        String cached = cache.paths().get(name);
        if (cached != null) {
            candidates.add(new String[] {cached, "its /etc/ld.so.cache"});
        }
        for (String dir : defaultDirectories) {
            candidates.add(new String[] {join(dir, name), "the loader's default directory " + dir});
        }
        for (String dir : driverDirectories) {
            candidates.add(new String[] {join(dir, name), "the driver's directory " + dir + " (LD_LIBRARY_PATH)"});
        }
        for (String[] candidate : candidates) {
            Optional<String> end = follow(root, candidate[0]);
            Optional<FileStat> stat = end.flatMap(p -> stat(root, p, false)).filter(FileStat::isRegularFile);
            if (stat.isPresent()) {
                return classify(root, name, end.get(), stat.get(), candidate[1], nodeFiles, compats);
            }
        }
        return new DriverLoad.Loaded(name, "", DriverLoad.Source.NOT_FOUND, Optional.empty(), Optional.empty(), "");
    }

    private DriverLoad.Loaded classify(RootFs root, String name, String path, FileStat stat, String via,
                                       Map<String, FileStat> nodeFiles, Compats compats) {
        String file = FileNames.baseName(path);
        Optional<String> version = FileNames.versionOf(file).filter(FileNames::isDriverVersion);
        boolean node = nodeFiles.values().stream().anyMatch(stat::sameFile) || hostFiles.known(stat).isPresent();
        if (node) {
            Optional<String> hostVersion = hostFiles.known(stat).map(HostDriverFiles.HostDriverFile::version);
            return new DriverLoad.Loaded(name, path, DriverLoad.Source.NODE, hostVersion.or(() -> version), Optional.empty(), via);
        }
        Optional<DriverLoad.Compat> compat = compats.of(FileNames.dirName(path), file.startsWith("libcuda.so.")
                ? note(root, path) : Optional.empty());
        return new DriverLoad.Loaded(name, path, compat.isPresent() ? DriverLoad.Source.COMPAT : DriverLoad.Source.IMAGE,
                version, compat, via);
    }

    /** CUDA's forward-compatibility directories of one root, and whether NVIDIA's hook configured them. */
    private static final class Compats {
        private final RootFs root;
        private Set<String> hookDirectories;

        Compats(RootFs root) {
            this.root = root;
        }

        /** A compat directory's description, if {@code directory} is one (by its name, or by its libcuda's note). */
        Optional<DriverLoad.Compat> of(String directory, Optional<CudaCompatNote> note) {
            boolean byHook = hookDirectories().contains(directory);
            if (!directory.endsWith("/compat") && note.isEmpty() && !byHook) {
                return Optional.empty();
            }
            return Optional.of(new DriverLoad.Compat(directory, note.map(CudaCompatNote::cudaVersion),
                    note.map(CudaCompatNote::driverBranches).orElse(List.of()), byHook));
        }

        /** The directories NVIDIA's enable-cuda-compat hook named, in its {@code 00-compat-*.conf} files. */
        private Set<String> hookDirectories() {
            if (hookDirectories != null) {
                return hookDirectories;
            }
            hookDirectories = new LinkedHashSet<>();
            try (Directory conf = root.openDirectory(CONF_D, false)) {
                int read = 0;
                for (Libc.RawDirent e : conf.names()) {
                    if (e.name().startsWith("00-compat-") && e.name().endsWith(".conf") && read++ < MAX_CONF_FILES) {
                        read(conf, e.name());
                    }
                }
            } catch (ErrnoException e) {
                // No such directory, or not readable: no hook configured anything.
            }
            return hookDirectories;
        }

        private void read(Directory conf, String name) {
            try (ReadableFile f = conf.openFile(name)) {
                byte[] bytes = new byte[(int) Math.min(f.size(), MAX_CONF_BYTES)];
                f.readFully(0, bytes, bytes.length);
                for (String line : new String(bytes, StandardCharsets.ISO_8859_1).split("\n")) {
                    String dir = line.strip();
                    if (dir.startsWith("/")) {
                        hookDirectories.add(dir.endsWith("/") && dir.length() > 1 ? dir.substring(0, dir.length() - 1) : dir);
                    }
                }
            } catch (ErrnoException | IOException e) {
                // Unreadable: not counted as the hook's.
            }
        }
    }

    private static Optional<CudaCompatNote> note(RootFs root, String path) {
        try (ReadableFile f = root.openRegularFile(path)) {
            return CudaCompatNote.read(f);
        } catch (ErrnoException | ElfFormatException | IOException e) {
            return Optional.empty();
        }
    }

    /**
     * The path a name ends at once its final links are followed inside the root (the directories
     * on the way are resolved in-root by the resolver); empty for nothing there, or a loop.
     */
    static Optional<String> follow(RootFs root, String path) {
        String current = normalize(path);
        for (int hop = 0; hop < MAX_HOPS; hop++) {
            String dir = FileNames.dirName(current);
            String base = FileNames.baseName(current);
            if (!FileNames.isPlainName(base)) {
                return Optional.empty();
            }
            try (Directory d = root.openDirectory(dir, false)) {
                Optional<DirEntry> entry = d.entry(base);
                if (entry.isEmpty()) {
                    return Optional.empty();
                }
                if (entry.get().kind() != EntryKind.SYMLINK) {
                    return Optional.of(current);
                }
                String target = d.readLink(base);
                current = normalize(target.startsWith("/") ? target : join(dir, target));
            } catch (ErrnoException e) {
                return Optional.empty();
            }
        }
        return Optional.empty();
    }

    private static Optional<FileStat> stat(RootFs root, String path, boolean follow) {
        try {
            return Optional.of(root.stat(path, follow));
        } catch (ErrnoException e) {
            return Optional.empty();
        }
    }

    private static String join(String dir, String name) {
        return dir.endsWith("/") ? dir + name : dir + "/" + name;
    }

    /** "." and ".." taken out lexically, as inside the root ("/.." is "/"); repeated slashes folded. */
    static String normalize(String path) {
        List<String> parts = new ArrayList<>();
        for (String part : path.split("/")) {
            if (part.isEmpty() || part.equals(".")) {
                continue;
            }
            if (part.equals("..")) {
                if (!parts.isEmpty()) {
                    parts.removeLast();
                }
            } else {
                parts.add(part);
            }
        }
        return "/" + String.join("/", parts);
    }
}
