package io.driveralias.agent.overlay;

import io.driveralias.agent.core.AliasPlanner;
import io.driveralias.agent.core.DriverLibrary;
import io.driveralias.agent.core.DriverVersions;
import io.driveralias.agent.core.FileNames;
import io.driveralias.agent.core.LinkAction;
import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.elf.ElfFormatException;
import io.driveralias.agent.fs.Directory;
import io.driveralias.agent.fs.Errno;
import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.fs.Libc;
import io.driveralias.agent.fs.OpenFlags;
import io.driveralias.agent.fs.PathResolver;
import io.driveralias.agent.fs.RootFs;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Repairs a container before it starts. When a created container's configuration already
 * names the driver files it will receive (bind mounts of versioned libraries), the aliases
 * are written into its writable layer (overlay2's UpperDir) so they exist at its first
 * instruction. Only where every component of the library directory is a real directory in
 * the merged view of its layers: an image whose {@code /lib64} is a symlink keeps it, and a
 * directory created in the upper layer copies the owner and mode of the one it stands over.
 * Lower layers are never written. Anything unusual leaves the container to the start path.
 */
public final class CreateTimeSeeder {

    private static final Logger LOG = LoggerFactory.getLogger(CreateTimeSeeder.class);

    /** What the agent knows of a driver file declared at create: where it lands, where it comes from. */
    private record Declared(String directory, String fileName, String hostSource) {
    }

    /** SONAMEs of host files, through the node-wide cache. */
    @FunctionalInterface
    public interface SonameSource {
        Optional<String> soname(String hostPath) throws ErrnoException, ElfFormatException, IOException;
    }

    /**
     * Throws once Docker has begun to start the container. overlayfs forbids changing a layer
     * under a mounted overlay; Docker creates the {@code merged} directory just before it
     * mounts the root and removes it after unmounting, so while it is absent the upper layer
     * is nobody's but ours.
     */
    @FunctionalInterface
    private interface NotStarted {
        void require() throws ErrnoException;
    }

    private final java.util.Set<String> warned = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final SonameSource sonames;
    private final AliasPlanner planner;
    private final PathResolver resolver;
    private final Optional<String> driverVersion;

    public CreateTimeSeeder(SonameSource sonames, AliasPlanner planner, PathResolver resolver,
                            Optional<String> driverVersion) {
        this.sonames = sonames;
        this.planner = planner;
        this.resolver = resolver;
        this.driverVersion = driverVersion;
    }

    /** The links written (each read back), or empty if nothing was seeded. */
    public List<LinkAction> seed(ContainerInfo info) {
        if (info.running() || info.startedAt().isPresent()) {
            return List.of();
        }
        if (!"overlay2".equals(info.graphDriver())) {
            // devicemapper, btrfs, zfs, vfs: no UpperDir/LowerDir to write into before the start.
            LOG.debug("container {}: not repaired before start: storage driver {} has no overlay layers; "
                    + "the start path repairs it through /proc/<pid>/root", info.id(), info.graphDriver());
            return List.of();
        }
        Optional<String> upper = info.graphPath("UpperDir");
        Optional<String> lower = info.graphPath("LowerDir");
        Optional<String> merged = info.graphPath("MergedDir");
        List<Declared> declared = declaredDriverFiles(info);
        if (upper.isEmpty() || lower.isEmpty() || merged.isEmpty() || declared.isEmpty()) {
            return List.of();
        }
        NotStarted notStarted = () -> requireUnmounted(merged.get());
        List<LinkAction> written = new ArrayList<>();
        try {
            // With `docker run` the start usually wins the race: find out before any other work.
            notStarted.require();
        } catch (ErrnoException e) {
            return written;
        }
        try (LayerStack layers = LayerStack.open(upper.get(), lower.get(), resolver)) {
            for (Map.Entry<String, List<DriverLibrary>> e : libraries(declared).entrySet()) {
                written.addAll(seedDirectory(layers, e.getKey(), e.getValue(), notStarted));
            }
        } catch (ErrnoException e) {
            // Docker removed the layer, began the start, or something in the layers is not
            // what it should be: the start path repairs (and reports) through the container's root.
            // A refusal (a missing capability) is worth a warning, once for each kind.
            boolean refused = e.is(Errno.EPERM) || e.is(Errno.EACCES);
            if (refused && warned.add(e.getMessage().replaceAll("[0-9a-f]{12,}", "*"))) {
                LOG.warn("container {}: not repaired before start, the start path will: {}", info.id(), e.getMessage());
            } else {
                LOG.debug("container {}: not seeded before start: {}", info.id(), e.getMessage());
            }
        }
        return written;
    }

    private static void requireUnmounted(String mergedDir) throws ErrnoException {
        try {
            Libc.close(Libc.openHost(mergedDir, OpenFlags.O_PATH | OpenFlags.O_NOFOLLOW));
        } catch (ErrnoException e) {
            if (e.is(Errno.ENOENT)) {
                return;
            }
            throw e;
        }
        throw new ErrnoException("seed", mergedDir + " exists: the container is starting", Errno.EBUSY);
    }

    private List<LinkAction> seedDirectory(LayerStack layers, String path, List<DriverLibrary> libraries,
                                           NotStarted notStarted) throws ErrnoException {
        Optional<MergedDirectory> merged = layers.directory(path);
        if (merged.isEmpty()) {
            return List.of();
        }
        try (MergedDirectory dir = merged.get()) {
            List<LinkAction> changes = planner.plan(path, libraries, LayerStack.listing(dir)).stream()
                    .filter(a -> a.kind().changesSomething()).toList();
            if (changes.isEmpty()) {
                return List.of();
            }
            List<MergedDirectory.Component> components = dir.components();
            int present = 0;
            while (present < components.size() && components.get(present).inUpper()) {
                present++;
            }
            try (Directory parent = upperDirectory(layers, components.subList(0, present))) {
                return present == components.size()
                        ? linkInPlace(parent, changes, notStarted)
                        : buildAndMoveIn(parent, components.subList(present, components.size()), changes, notStarted);
            }
        }
    }

    /** The upper layer already has the directory: each link is renamed in on its own. */
    private static List<LinkAction> linkInPlace(Directory target, List<LinkAction> changes, NotStarted notStarted)
            throws ErrnoException {
        List<LinkAction> written = new ArrayList<>();
        for (LinkAction action : changes) {
            notStarted.require();
            // In the upper layer a stale link of a lower layer is simply shadowed.
            target.link(action.name(), action.target(), target.entry(action.name()).isPresent());
            if (target.readLink(action.name()).equals(action.target())) {
                written.add(action);
            }
        }
        return written;
    }

    /**
     * The upper layer lacks (part of) the directory: the missing part is built complete, with
     * its owners, modes and links, under a random name, then renamed into place in one step,
     * right after checking once more that Docker has not begun to mount the container's root.
     * Overlayfs thus never sees a half-made directory, nor one with the wrong mode.
     */
    private static List<LinkAction> buildAndMoveIn(Directory parent, List<MergedDirectory.Component> missing,
                                                   List<LinkAction> changes, NotStarted notStarted)
            throws ErrnoException {
        MergedDirectory.Component first = missing.getFirst();
        String temporary = RootFs.temporaryName(first.name());
        List<Directory> built = new ArrayList<>();
        boolean moved = false;
        try {
            built.add(parent.makeDirectory(temporary, first.stat().uid(), first.stat().gid(), first.stat().permissions()));
            for (MergedDirectory.Component c : missing.subList(1, missing.size())) {
                built.add(built.getLast().makeDirectory(c.name(), c.stat().uid(), c.stat().gid(), c.stat().permissions()));
            }
            for (LinkAction action : changes) {
                built.getLast().link(action.name(), action.target(), false);
            }
            notStarted.require();
            parent.renameNoReplace(temporary, first.name());
            moved = true;
            return changes;
        } finally {
            if (!moved) {
                takeBack(parent, temporary, built, missing, changes);
            }
            built.forEach(Directory::close);
        }
    }

    /** Removes a half-built directory that never became visible under its real name. */
    private static void takeBack(Directory parent, String temporary, List<Directory> built,
                                 List<MergedDirectory.Component> missing, List<LinkAction> changes) {
        if (built.size() == missing.size()) {
            for (LinkAction action : changes) {
                quietly(() -> built.getLast().remove(action.name(), false));
            }
        }
        for (int i = built.size() - 1; i >= 1; i--) {
            Directory holder = built.get(i - 1);
            String name = missing.get(i).name();
            quietly(() -> holder.remove(name, true));
        }
        quietly(() -> parent.remove(temporary, true));
    }

    @FunctionalInterface
    private interface Step {
        void run() throws ErrnoException;
    }

    private static void quietly(Step step) {
        try {
            step.run();
        } catch (ErrnoException ignored) {
            // Best effort: the name is already gone, or the layer went away with the container.
        }
    }

    /** The upper-layer directories that exist along the path: real directories, never followed. */
    private static Directory upperDirectory(LayerStack layers, List<MergedDirectory.Component> present)
            throws ErrnoException {
        Directory current = layers.upper().openDirectory("/", true);
        try {
            for (MergedDirectory.Component c : present) {
                Directory next = current.subdirectory(c.name());
                current.close();
                current = next;
            }
            return current;
        } catch (ErrnoException e) {
            current.close();
            throw e;
        }
    }

    private List<Declared> declaredDriverFiles(ContainerInfo info) {
        List<Declared> all = new ArrayList<>();
        for (ContainerInfo.Mount m : info.mounts()) {
            String name = FileNames.baseName(m.destination());
            if ("bind".equals(m.type()) && m.destination().startsWith("/") && FileNames.versionOf(name).isPresent()) {
                all.add(new Declared(FileNames.dirName(m.destination()), name, m.source()));
            }
        }
        Optional<String> version = driverVersion.or(() -> DriverVersions.detect(all.stream().map(Declared::fileName).toList()));
        return version.map(v -> all.stream().filter(d -> FileNames.isDriverFile(d.fileName(), v)).toList())
                .orElse(List.of());
    }

    private Map<String, List<DriverLibrary>> libraries(List<Declared> declared) {
        Map<String, List<DriverLibrary>> byDirectory = new LinkedHashMap<>();
        for (Declared d : declared) {
            try {
                sonames.soname(d.hostSource()).ifPresent(soname -> byDirectory
                        .computeIfAbsent(d.directory(), k -> new ArrayList<>())
                        .add(new DriverLibrary(d.directory(), d.fileName(), soname)));
            } catch (ErrnoException | ElfFormatException | IOException | IllegalArgumentException e) {
                LOG.debug("cannot read the SONAME of {}: {}", d.hostSource(), e.getMessage());
            }
        }
        return byDirectory;
    }
}
