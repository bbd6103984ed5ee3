package io.driveralias.agent.ldcache;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.fs.PathResolver;
import io.driveralias.agent.fs.RootFs;
import io.driveralias.agent.testing.ImageRoots;
import io.driveralias.agent.testing.NativeLibraries;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The loader cache's answer for a name, on caches made by the host's real ldconfig: the first
 * entry of the loader's ABI, so NVIDIA's 00-compat configuration puts CUDA's compat libcuda first.
 */
class LoaderLookupTest {

    @TempDir
    Path dir;

    private LoaderLookup.Answer lookup(Path root, String... names) throws Exception {
        try (RootFs fs = RootFs.openHostDirectory(root.toString(), PathResolver.detect(false))) {
            return LoaderLookup.lookup(fs, List.of(names));
        }
    }

    private Path imageWithCompat() {
        Path root = ImageRoots.debian(dir.resolve("image"));
        Path lib = root.resolve(ImageRoots.LIB_DIR.substring(1));
        Path driver = NativeLibraries.compile(lib, "libcuda.so.535.104.05", "libcuda.so.1");
        NativeLibraries.copy(driver, lib, "libnvidia-ml.so.535.104.05");
        ImageRoots.compat(root, "12.9", NativeLibraries.compileCompat(dir.resolve("pkg"), "575.57.08", "12.9",
                List.of(535, 550, 560, 565, 570, 575)));
        return root;
    }

    @Test
    void nvidiasCompatConfigurationPutsTheCompatLibcudaFirst() throws Exception {
        Path root = imageWithCompat();
        Files.createSymbolicLink(root.resolve(ImageRoots.LIB_DIR.substring(1)).resolve("libcuda.so.1"),
                Path.of("libcuda.so.535.104.05"));
        ImageRoots.enableCompatAsNvidiasHookDoes(root, "12.9");
        ImageRoots.ldconfig(root);

        LoaderLookup.Answer answer = lookup(root, "libcuda.so.1", "libnvidia-ml.so.1", "libz.so.1");

        assertThat(answer.present()).isTrue();
        assertThat(answer.paths()).containsExactly(java.util.Map.entry("libcuda.so.1", "/usr/local/cuda-12.9/compat/libcuda.so.1"));
        assertThat(ImageRoots.printCache(root)).as("glibc's own reader agrees on the order")
                .containsPattern("libcuda.so.1 \\(libc6,x86-64\\) => /usr/local/cuda-12.9/compat/libcuda.so.1\\n"
                        + "\\s+libcuda.so.1 \\(libc6,x86-64\\) => /usr/lib/x86_64-linux-gnu/libcuda.so.1");
    }

    @Test
    void withoutItTheDriversDirectoryAnswers() throws Exception {
        Path root = imageWithCompat();
        Files.createSymbolicLink(root.resolve(ImageRoots.LIB_DIR.substring(1)).resolve("libcuda.so.1"),
                Path.of("libcuda.so.535.104.05"));
        ImageRoots.ldconfig(root);

        assertThat(lookup(root, "libcuda.so.1").paths()).containsEntry("libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
    }

    @Test
    void noCacheOrAnUnreadableOneAnswersNothing() throws Exception {
        Path root = imageWithCompat();
        assertThat(lookup(root, "libcuda.so.1")).isEqualTo(new LoaderLookup.Answer(false, java.util.Map.of(),
                java.util.Optional.empty()));

        Files.writeString(root.resolve("etc/ld.so.cache"), "not a cache");
        LoaderLookup.Answer garbage = lookup(root, "libcuda.so.1");
        assertThat(garbage.present()).isTrue();
        assertThat(garbage.paths()).isEmpty();
        assertThat(garbage.problem()).get().asString().contains("not read");
    }
}
