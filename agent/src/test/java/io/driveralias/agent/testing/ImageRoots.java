package io.driveralias.agent.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Image roots on disk laid out as real images lay them out, for the loader's view of a GPU
 * container: a Debian-style multiarch library directory with a C library, the loader's
 * configuration ({@code /etc/ld.so.conf} including {@code /etc/ld.so.conf.d/*.conf}), CUDA's
 * forward-compatibility package under {@code /usr/local/cuda-<v>/compat} as NVIDIA ships it, and
 * a loader cache made by the host's real glibc {@code ldconfig}, so that its order is ldconfig's.
 */
public final class ImageRoots {

    public static final String LIB_DIR = "/usr/lib/x86_64-linux-gnu";

    private ImageRoots() {
    }

    /** {@code root} with a library directory, a stand-in {@code libc.so.6} and Debian's loader configuration. */
    public static Path debian(Path root) {
        try {
            Path lib = Files.createDirectories(root.resolve(LIB_DIR.substring(1)));
            if (!Files.exists(lib.resolve("libc.so.6"))) {
                NativeLibraries.compile(lib, "libc.so.6", "libc.so.6");
            }
            Path conf = Files.createDirectories(root.resolve("etc/ld.so.conf.d"));
            Files.writeString(root.resolve("etc/ld.so.conf"), "include /etc/ld.so.conf.d/*.conf\n");
            Files.writeString(conf.resolve("libc.conf"), "# libc default configuration\n/usr/local/lib\n");
            Files.writeString(conf.resolve("x86_64-linux-gnu.conf"), "# Multiarch support\n/usr/local/lib/x86_64-linux-gnu\n"
                    + "/lib/x86_64-linux-gnu\n" + LIB_DIR + "\n");
            return root;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * CUDA's forward-compatibility package in {@code root}, as cuda-compat installs it:
     * {@code /usr/local/cuda-<cuda>/compat/libcuda.so.<version>} with its {@code libcuda.so.1} and
     * {@code libcuda.so} links, and {@code /usr/local/cuda -> cuda-<cuda>}. {@code libcuda} is the
     * compat library to put there (a compiled one with NVIDIA's note, or a real driver's libcuda for
     * the older packages, which carry none).
     */
    public static Path compat(Path root, String cuda, Path libcuda) {
        try {
            String name = libcuda.getFileName().toString();
            Path dir = Files.createDirectories(root.resolve("usr/local/cuda-" + cuda + "/compat"));
            DriverHosts.link(libcuda, dir.resolve(name));
            Files.createSymbolicLink(dir.resolve("libcuda.so.1"), Path.of(name));
            Files.createSymbolicLink(dir.resolve("libcuda.so"), Path.of("libcuda.so.1"));
            Path current = root.resolve("usr/local/cuda");
            if (!Files.exists(current, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                Files.createSymbolicLink(current, Path.of("cuda-" + cuda));
            }
            return dir;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * What NVIDIA's enable-cuda-compat hook writes when it decides the compat libraries are to be
     * used: {@code /etc/ld.so.conf.d/00-compat-<uuid>.conf} naming the compat directory as it
     * resolved it, first among the configuration files.
     */
    public static Path enableCompatAsNvidiasHookDoes(Path root, String cuda) {
        try {
            return Files.writeString(root.resolve("etc/ld.so.conf.d/00-compat-2f1e5a4c-9d3b-4e7a-8c61-0b5f3e9d2a17.conf"),
                    "/usr/local/cuda-" + cuda + "/compat\n");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The root's {@code /etc/ld.so.cache}, made by the host's real glibc ldconfig from the root's configuration. */
    public static Path ldconfig(Path root) {
        Processes.check(List.of("ldconfig", "-X", "-r", root.toString()));
        return root.resolve("etc/ld.so.cache");
    }

    /** {@code ldconfig -p} of the root's cache: its entries in the order the loader meets them. */
    public static String printCache(Path root) {
        return Processes.check(List.of("ldconfig", "-p", "-C", root.resolve("etc/ld.so.cache").toString()));
    }
}
