package io.driveralias.agent.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Hosts on disk made of real drivers' user space ({@link RealDriver}): a host root whose
 * library directory holds one driver's versioned files as Debian installs them, and a host
 * procfs beside it ({@code --host-proc}) whose {@code 1/root} leads to that root and whose
 * {@code driver/nvidia/version} says what kernel module is loaded, in the module's own words.
 * Files are hard links into the fixture cache (the same filesystem here), so nothing is copied.
 */
public final class DriverHosts {

    public static final String LIB_DIR = "/usr/lib/x86_64-linux-gnu";

    private DriverHosts() {
    }

    /** A host procfs at {@code dir/proc} for the root at {@code dir/root}, with the module of {@code module} loaded (or none). */
    public static Path proc(Path dir, Optional<String> module) {
        try {
            Path proc = Files.createDirectories(dir.resolve("proc/1"));
            Path root = Files.createDirectories(dir.resolve("root"));
            if (!Files.exists(proc.resolve("root"), java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                Files.createSymbolicLink(proc.resolve("root"), root);
            }
            loadModule(dir.resolve("proc"), module);
            return dir.resolve("proc");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Loads (or, with none, unloads) the kernel module as the host's procfs at {@code proc} shows it. */
    public static void loadModule(Path proc, Optional<String> module) throws IOException {
        Path nvidia = proc.resolve("driver/nvidia");
        if (module.isEmpty()) {
            Files.deleteIfExists(nvidia.resolve("version"));
            return;
        }
        Files.createDirectories(nvidia);
        Files.writeString(nvidia.resolve("version"), "NVRM version: NVIDIA UNIX x86_64 Kernel Module  " + module.get()
                + "  Thu May  2 14:37:44 UTC 2024\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14) \n");
    }

    /**
     * Installs the versioned libraries of {@code packageLibraries} (a driver package's unpacked
     * directory) into {@code root}'s {@code /usr/lib/x86_64-linux-gnu/nvidia/<branch>}, as hard links.
     */
    public static Path install(Path root, Path packageLibraries, String branch) {
        try {
            Path target = Files.createDirectories(root.resolve(LIB_DIR.substring(1)).resolve("nvidia").resolve(branch));
            Pattern versioned = Pattern.compile("lib[A-Za-z0-9_-]+\\.so\\.[0-9]+\\.[0-9]+(\\.[0-9]+)?");
            try (Stream<Path> files = Files.list(packageLibraries)) {
                for (Path f : files.filter(f -> Files.isRegularFile(f, java.nio.file.LinkOption.NOFOLLOW_LINKS))
                        .filter(f -> versioned.matcher(f.getFileName().toString()).matches()).toList()) {
                    link(f, target.resolve(f.getFileName()));
                }
            }
            return target;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A hard link of {@code file} at {@code at} (a copy where the two are on different filesystems). */
    public static Path link(Path file, Path at) throws IOException {
        Files.createDirectories(at.getParent());
        try {
            return Files.createLink(at, file);
        } catch (IOException | UnsupportedOperationException e) {
            return Files.copy(file, at);
        }
    }
}
