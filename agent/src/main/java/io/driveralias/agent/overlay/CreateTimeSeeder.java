package io.driveralias.agent.overlay;

import io.driveralias.agent.core.AliasPlanner;
import io.driveralias.agent.core.DriverLibrary;
import io.driveralias.agent.core.DriverVersions;
import io.driveralias.agent.core.FileNames;
import io.driveralias.agent.core.LinkAction;
import io.driveralias.agent.docker.ContainerInfo;
import io.driveralias.agent.elf.ElfFormatException;
import io.driveralias.agent.fs.Directory;
import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.fs.PathResolver;
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

    /** The links written (all verified by reading them back), or empty if nothing was seeded. */
    public List<LinkAction> seed(ContainerInfo info) {
        if (!"overlay2".equals(info.graphDriver()) || info.running() || info.startedAt().isPresent()) {
            return List.of();
        }
        Optional<String> upper = info.graphPath("UpperDir");
        Optional<String> lower = info.graphPath("LowerDir");
        List<Declared> declared = declaredDriverFiles(info);
        if (upper.isEmpty() || lower.isEmpty() || declared.isEmpty()) {
            return List.of();
        }
        Map<String, List<DriverLibrary>> byDirectory = libraries(declared);
        List<LinkAction> written = new ArrayList<>();
        try (LayerStack layers = LayerStack.open(upper.get(), lower.get(), resolver)) {
            for (Map.Entry<String, List<DriverLibrary>> e : byDirectory.entrySet()) {
                written.addAll(seedDirectory(layers, e.getKey(), e.getValue()));
            }
        } catch (ErrnoException e) {
            // Docker removed the layer, or something in it is not what it should be: the
            // start path will repair (and report) through the container's own root.
            LOG.debug("container {}: not seeded before start: {}", info.id(), e.getMessage());
        }
        return written;
    }

    private List<LinkAction> seedDirectory(LayerStack layers, String path, List<DriverLibrary> libraries)
            throws ErrnoException {
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
            try (Directory target = upperCopy(layers, dir)) {
                List<LinkAction> written = new ArrayList<>();
                for (LinkAction action : changes) {
                    // In the upper layer a stale link of a lower layer is simply shadowed.
                    target.link(action.name(), action.target(), target.entry(action.name()).isPresent());
                    if (target.readLink(action.name()).equals(action.target())) {
                        written.add(action);
                    }
                }
                return written;
            }
        }
    }

    /** The library directory in the upper layer, created component by component where missing. */
    private static Directory upperCopy(LayerStack layers, MergedDirectory merged) throws ErrnoException {
        Directory current = layers.upper().openDirectory("/", true);
        try {
            for (MergedDirectory.Component c : merged.components()) {
                Directory next = c.inUpper() ? current.subdirectory(c.name())
                        : current.makeDirectory(c.name(), c.stat().uid(), c.stat().gid(), c.stat().permissions());
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
