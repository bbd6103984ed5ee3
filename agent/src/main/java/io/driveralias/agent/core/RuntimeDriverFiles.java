package io.driveralias.agent.core;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The driver files a GPU runtime will add to a container it has not started yet: the ones
 * earlier containers on this node received from the host's library directories (file name and
 * SONAME, as the agent read them inside those containers), in the directory the runtime puts
 * them. Pure.
 *
 * <p>The NVIDIA runtime mounts the libraries into the image's main library directory: the
 * multiarch one ({@code /usr/lib/x86_64-linux-gnu}) in a Debian-family image, {@code /usr/lib64}
 * in the others. The first of the agent's library directories that the image has is that
 * directory for both families (the multiarch ones come first); where it is not, the start path
 * still finds the files and links them where they are.
 */
public final class RuntimeDriverFiles {

    private RuntimeDriverFiles() {
    }

    /** Asks whether a path is a directory of the image (in-root, never across a mount). */
    @FunctionalInterface
    public interface DirectoryProbe<E extends Exception> {
        boolean isDirectory(String path) throws E;
    }

    /**
     * @param learned       file name to SONAME, of driver files seen injected from the host
     * @param driverVersion the configured or host's version; else the newest learned
     * @param candidates    the agent's library directories, in order
     * @return the libraries to alias, in the first candidate directory the image has; empty
     *         when nothing was learned yet or the image has none of them
     */
    public static <E extends Exception> List<DriverLibrary> expected(Map<String, String> learned,
            Optional<String> driverVersion, List<String> candidates, DirectoryProbe<E> probe) throws E {
        Optional<String> version = driverVersion.or(() -> DriverVersions.detect(learned.keySet()));
        if (version.isEmpty()) {
            return List.of();
        }
        List<Map.Entry<String, String>> files = learned.entrySet().stream()
                .filter(e -> FileNames.isDriverFile(e.getKey(), version.get()) && FileNames.isPlainName(e.getValue()))
                .sorted(Map.Entry.comparingByKey()).toList();
        if (files.isEmpty()) {
            return List.of();
        }
        for (String directory : candidates) {
            if (probe.isDirectory(directory)) {
                List<DriverLibrary> libraries = new ArrayList<>();
                files.forEach(e -> libraries.add(new DriverLibrary(directory, e.getKey(), e.getValue())));
                return libraries;
            }
        }
        return List.of();
    }
}
