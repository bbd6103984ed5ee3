package io.driveralias.agent.core;

import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * The driver files a GPU runtime will add to a container it has not started yet: the ones
 * earlier containers on this node received from the host's library directories (file name and
 * SONAME, as the agent read them inside those containers), of the driver's version. Pure.
 *
 * <p>Where they land is the caller's to find: the NVIDIA runtime mounts the libraries into the
 * image's main library directory, the multiarch one ({@code /usr/lib/x86_64-linux-gnu}) in a
 * Debian-family image, {@code /usr/lib64} in the others. The first of the agent's library
 * directories that the image has is that directory for both families (the multiarch ones come
 * first); where it is not, the start path still finds the files and links them where they are.
 */
public final class RuntimeDriverFiles {

    private RuntimeDriverFiles() {
    }

    /**
     * @param learned       file name to SONAME, of driver files seen injected from the host
     * @param driverVersion the configured or host's version; else the newest learned
     * @return file name to SONAME, sorted by file name; empty when nothing of that version was learned
     */
    public static Map<String, String> expected(Map<String, String> learned, Optional<String> driverVersion) {
        Optional<String> version = driverVersion.or(() -> DriverVersions.detect(learned.keySet()));
        Map<String, String> files = new TreeMap<>();
        version.ifPresent(v -> learned.forEach((name, soname) -> {
            if (FileNames.isDriverFile(name, v) && FileNames.isPlainName(soname)) {
                files.put(name, soname);
            }
        }));
        return files;
    }
}
