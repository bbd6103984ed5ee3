package io.driveralias.agent.ldcache;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.NativeLibraries;
import io.driveralias.agent.testing.Processes;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A tiny root filesystem the host's real glibc can run in: the host's ld.so and libc, a
 * program that needs {@code libnvtest.so.1}, and that library in {@code /opt/driver/lib},
 * a directory only the cache can lead the loader to. The cache is made by the host's real
 * ldconfig, so the codec is tested against glibc's writer and glibc's reader, not itself.
 */
final class LoaderRoot {

    static final String LIB_DIR = "/usr/lib/x86_64-linux-gnu";
    static final String DRIVER_DIR = "/opt/driver/lib";
    static final String SONAME = "libnvtest.so.1";
    static final String PROGRAM = "/probe";

    final Path root;

    private LoaderRoot(Path root) {
        this.root = root;
    }

    /** The root, with a cache in {@code format} ("new", "compat", "old") that lacks the driver. */
    static LoaderRoot create(Path root, String format) throws IOException {
        LoaderRoot r = new LoaderRoot(root);
        Path lib = Files.createDirectories(root.resolve(LIB_DIR.substring(1)));
        Files.createDirectories(root.resolve("lib64"));
        Files.createDirectories(root.resolve("etc"));
        Files.copy(Path.of("/lib64/ld-linux-x86-64.so.2").toRealPath(), root.resolve("lib64/ld-linux-x86-64.so.2"));
        Files.copy(Path.of(LIB_DIR, "libc.so.6").toRealPath(), lib.resolve("libc.so.6"));
        // Stand-ins whose versions sort numerically, to give the order some work.
        Path one = NativeLibraries.compile(lib, "libalpha.so.1.2.10", "libalpha.so.1");
        NativeLibraries.copy(one, lib, "libalpha.so.10.0.0");
        NativeLibraries.compile(lib, "libzeta9.so.2.0", "libzeta9.so.2");
        NativeLibraries.compile(lib, "libzeta10.so.3.0", "libzeta10.so.3");
        // A glibc-hwcaps subdirectory: entries that index the cache's extension section.
        NativeLibraries.copy(one, lib.resolve("glibc-hwcaps/x86-64-v2"), "libalpha.so.1.2.10");
        NativeLibraries.copy(one, lib.resolve("glibc-hwcaps/x86-64-v3"), "libalpha.so.1.2.10");
        Path driver = Files.createDirectories(root.resolve(DRIVER_DIR.substring(1)));
        Path real = NativeLibraries.compile(driver, "libnvtest.so.535.104.05", SONAME);
        Files.createSymbolicLink(driver.resolve(SONAME), real.getFileName());
        Path source = root.resolve("probe.c");
        String symbol = "libnvtest_so_535_104_05_version";
        Files.writeString(source, "#include <stdio.h>\nint " + symbol + "(void);\n"
                + "int main(void) { printf(\"probe %d\\n\", " + symbol + "()); return 0; }\n");
        Processes.check(List.of("gcc", "-o", root.resolve(PROGRAM.substring(1)).toString(), source.toString(),
                real.toString()));
        Files.writeString(root.resolve("etc/ld.so.conf"), LIB_DIR + "\n");
        Processes.check(List.of("ldconfig", "-X", "-c", format, "-r", root.toString()));
        assertThat(r.cacheFile()).exists();
        return r;
    }

    Path cacheFile() {
        return root.resolve("etc/ld.so.cache");
    }

    /** The real loader, in the root, looking up the driver through the cache alone. */
    Processes.Result runProbe() {
        return Processes.run(List.of("chroot", root.toString(), PROGRAM), 30);
    }

    /** {@code ldconfig -p} of the root's cache, as glibc's reader lists it. */
    String printCache() {
        return Processes.check(List.of("ldconfig", "-r", root.toString(), "-p"));
    }

    static String printCache(Path file) {
        return Processes.check(List.of("ldconfig", "-p", "-C", file.toString()));
    }

    static List<String> lines(String text) {
        return new ArrayList<>(text.lines().toList());
    }
}
