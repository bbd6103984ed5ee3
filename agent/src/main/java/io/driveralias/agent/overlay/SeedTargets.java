package io.driveralias.agent.overlay;

import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.DriverLibrary;
import io.driveralias.agent.core.FileNames;
import io.driveralias.agent.core.RuntimeDriverFiles;
import io.driveralias.agent.fs.ErrnoException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which driver libraries a created container is to be linked to before it starts, from what its
 * configuration says and what the host's driver is: the decision, apart from the writing
 * ({@link CreateTimeSeeder}). Only the host's own driver files count, so a container without a
 * GPU request, or one that binds look-alikes, gets nothing.
 */
final class SeedTargets {

    private static final Logger LOG = LoggerFactory.getLogger(SeedTargets.class);

    /** A driver file declared at create: where it lands, under which name, and its SONAME. */
    private record Declared(String directory, String fileName, String soname) {
    }

    /** Whether a path is a directory of the image (in-root, never across a mount). */
    @FunctionalInterface
    interface DirectoryProbe {
        boolean isDirectory(String path) throws ErrnoException;
    }

    /** The libraries to link, by directory, once it is known which directories the image has. */
    @FunctionalInterface
    interface Wanted {
        Map<String, List<DriverLibrary>> in(DirectoryProbe probe) throws ErrnoException;
    }

    private final HostDriver driver;
    private final List<String> libraryDirectories;

    /** @param libraryDirectories where a GPU runtime's files may land, in order */
    SeedTargets(HostDriver driver, List<String> libraryDirectories) {
        this.driver = driver;
        this.libraryDirectories = List.copyOf(libraryDirectories);
    }

    /**
     * What a created container will be linked to: its declared driver binds; else, if it asks
     * a GPU runtime for the driver, the files this node's runtime added before. Empty for a
     * container without a GPU request, and before the agent has seen the runtime's files.
     */
    Optional<Wanted> of(ContainerInfo info) {
        List<Declared> declared = declaredDriverFiles(info);
        if (!declared.isEmpty()) {
            return Optional.of(probe -> libraries(declared));
        }
        if (!info.gpu().addsDriverFiles()) {
            return Optional.empty();
        }
        Map<String, String> expected = RuntimeDriverFiles.expected(driver.runtimeFiles(info.gpu()), driver.driverVersion());
        if (expected.isEmpty()) {
            LOG.debug("container {}: its driver files come from the runtime, and no earlier container showed "
                    + "which: left to the start path", info.id());
            return Optional.empty();
        }
        return Optional.of(probe -> {
            for (String directory : libraryDirectories) {
                if (probe.isDirectory(directory)) {
                    List<DriverLibrary> libraries = new ArrayList<>();
                    expected.forEach((name, soname) -> libraries.add(new DriverLibrary(directory, name, soname)));
                    return Map.of(directory, libraries);
                }
            }
            return Map.of();
        });
    }

    /** Binds the configuration declares whose source is one of the host's own driver files; no other file counts. */
    private List<Declared> declaredDriverFiles(ContainerInfo info) {
        List<Declared> declared = new ArrayList<>();
        for (ContainerInfo.Mount m : info.mounts()) {
            String name = FileNames.baseName(m.destination());
            if ("bind".equals(m.type()) && m.destination().startsWith("/") && FileNames.hasDriverVersion(name)) {
                driver.sonameAt(m.source())
                        .ifPresent(soname -> declared.add(new Declared(FileNames.dirName(m.destination()), name, soname)));
            }
        }
        return declared;
    }

    private static Map<String, List<DriverLibrary>> libraries(List<Declared> declared) {
        Map<String, List<DriverLibrary>> byDirectory = new LinkedHashMap<>();
        for (Declared d : declared) {
            byDirectory.computeIfAbsent(d.directory(), k -> new ArrayList<>())
                    .add(new DriverLibrary(d.directory(), d.fileName(), d.soname()));
        }
        return byDirectory;
    }
}
