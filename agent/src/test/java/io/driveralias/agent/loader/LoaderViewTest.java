package io.driveralias.agent.loader;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.core.DriverLibrary;
import io.driveralias.agent.core.DriverLoad;
import io.driveralias.agent.core.DriverLoadText;
import io.driveralias.agent.fs.HostRoot;
import io.driveralias.agent.fs.PathResolver;
import io.driveralias.agent.fs.RootFs;
import io.driveralias.agent.repair.HostDriverFiles;
import io.driveralias.agent.testing.DriverHosts;
import io.driveralias.agent.testing.ImageRoots;
import io.driveralias.agent.testing.NativeLibraries;
import io.driveralias.agent.testing.RealDriver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a GPU container's loader takes, on roots laid out as real images and a real driver
 * (Debian bookworm's 535 on the host, its tesla-470 branch as the images' stale copies and old
 * compat libraries), with loader caches made by the real ldconfig.
 */
class LoaderViewTest {

    private static final String LIB = ImageRoots.LIB_DIR;

    @TempDir
    Path dir;

    private String host;
    private String legacy;
    private Path hostLib;
    private HostDriverFiles hostFiles;

    @BeforeEach
    void host() {
        host = RealDriver.version(RealDriver.Arch.AMD64);
        legacy = RealDriver.legacyVersion();
        hostLib = DriverHosts.install(dir.resolve("host"), RealDriver.libraryDir(RealDriver.Arch.AMD64), "current");
        hostFiles = new HostDriverFiles(new HostRoot(dir.resolve("no-proc").toString(), PathResolver.detect(false)),
                List.of(hostLib.toString()), Optional.empty());
    }

    /** An image root with the node's libcuda and NVML injected into {@code driverDir}, their aliases made there. */
    private Path container(String driverDir) throws Exception {
        Path root = ImageRoots.debian(dir.resolve("c"));
        Path target = Files.createDirectories(root.resolve(driverDir.substring(1)));
        for (String lib : List.of("libcuda.so.", "libnvidia-ml.so.")) {
            DriverHosts.link(hostLib.resolve(lib + host), target.resolve(lib + host));
            Files.createSymbolicLink(target.resolve(lib + "1"), Path.of(lib + host));
        }
        return root;
    }

    private List<DriverLibrary> located(String driverDir) {
        return List.of(new DriverLibrary(driverDir, "libcuda.so." + host, "libcuda.so.1"),
                new DriverLibrary(driverDir, "libnvidia-ml.so." + host, "libnvidia-ml.so.1"));
    }

    private DriverLoad look(Path root, String driverDir, String module) throws Exception {
        try (RootFs fs = RootFs.openHostDirectory(root.toString(), PathResolver.detect(false))) {
            return new LoaderView(hostFiles).look(fs, located(driverDir), Optional.of(module));
        }
    }

    @Test
    void theNodesDriverThroughTheCache() throws Exception {
        Path root = container(LIB);
        ImageRoots.ldconfig(root);

        DriverLoad load = look(root, LIB, host);

        assertThat(load.verdict()).isEqualTo(DriverLoad.Verdict.NODE);
        assertThat(load.libraries()).extracting(DriverLoad.Loaded::soname).containsExactly("libcuda.so.1", "libnvidia-ml.so.1");
        assertThat(load.principal().get().path()).isEqualTo(LIB + "/libcuda.so." + host);
        assertThat(load.principal().get().via()).isEqualTo("its /etc/ld.so.cache");
        assertThat(DriverLoadText.sentence(load)).isEqualTo("the node's driver " + host + " (libcuda.so.1, libnvidia-ml.so.1)");
    }

    @Test
    void anImagesStaleCopyListedFirstShadowsTheInjectedDriver() throws Exception {
        // An old driver's libcuda copied into /usr/local/lib, which Debian's libc.conf lists before
        // the multiarch directory the runtime injects into.
        Path root = container(LIB);
        Path local = Files.createDirectories(root.resolve("usr/local/lib"));
        DriverHosts.link(RealDriver.legacyLibraryDir().resolve("libcuda.so." + legacy), local.resolve("libcuda.so." + legacy));
        Files.createSymbolicLink(local.resolve("libcuda.so.1"), Path.of("libcuda.so." + legacy));
        ImageRoots.ldconfig(root);

        DriverLoad load = look(root, LIB, host);

        assertThat(load.verdict()).isEqualTo(DriverLoad.Verdict.IMAGE);
        assertThat(load.verdict().mismatch()).isTrue();
        assertThat(DriverLoadText.sentence(load)).isEqualTo("the image's own libcuda.so.1 (" + legacy
                + ") is loaded instead of the node's driver " + host + " (/usr/local/lib/libcuda.so." + legacy
                + ", through its /etc/ld.so.cache)");
        assertThat(load.libraries().get(1).source()).as("NVML is the node's").isEqualTo(DriverLoad.Source.NODE);
    }

    @Test
    void aBuildTimeStubLeftInTheImageIsAnImageCopyOfNoVersion() throws Exception {
        Path root = ImageRoots.debian(dir.resolve("c"));
        Path lib = root.resolve(LIB.substring(1));
        NativeLibraries.compile(lib, "libcuda.so.1", "libcuda.so.1");
        DriverHosts.link(hostLib.resolve("libcuda.so." + host), lib.resolve("libcuda.so." + host));
        ImageRoots.ldconfig(root);

        DriverLoad load = look(root, LIB, host);

        assertThat(load.verdict()).isEqualTo(DriverLoad.Verdict.IMAGE);
        assertThat(load.principal().get().version()).isEmpty();
        assertThat(DriverLoadText.sentence(load)).contains("the image's own libcuda.so.1 (no driver version in its name: a stub");
    }

    @Test
    void forwardCompatibilityNewerThanTheModuleAndEnabledByNvidiasHookIsRight() throws Exception {
        Path root = container(LIB);
        ImageRoots.compat(root, "12.9", NativeLibraries.compileCompat(dir.resolve("pkg"), "575.57.08", "12.9",
                List.of(535, 550, 560, 565, 570, 575)));
        ImageRoots.enableCompatAsNvidiasHookDoes(root, "12.9");
        ImageRoots.ldconfig(root);

        DriverLoad load = look(root, LIB, host);

        assertThat(load.verdict()).isEqualTo(DriverLoad.Verdict.COMPAT);
        DriverLoad.Loaded cuda = load.principal().get();
        assertThat(cuda.path()).isEqualTo("/usr/local/cuda-12.9/compat/libcuda.so.575.57.08");
        assertThat(cuda.compat()).contains(new DriverLoad.Compat("/usr/local/cuda-12.9/compat", Optional.of("12.9"),
                List.of(535, 550, 560, 565, 570, 575), true));
        assertThat(DriverLoadText.sentence(load)).startsWith("CUDA forward compatibility: the image's libcuda.so.1"
                + " (575.57.08, CUDA 12.9, enabled by NVIDIA's hook) is loaded over the node's driver " + host);
        assertThat(DriverLoadText.advice(load)).contains("data center GPUs");
    }

    @Test
    void compatForABranchItDoesNotRunOnIsUnsupported() throws Exception {
        Path root = container(LIB);
        ImageRoots.compat(root, "12.9", NativeLibraries.compileCompat(dir.resolve("pkg"), "575.57.08", "12.9",
                List.of(535, 550, 560, 565, 570, 575)));
        ImageRoots.enableCompatAsNvidiasHookDoes(root, "12.9");
        ImageRoots.ldconfig(root);

        assertThat(look(root, LIB, legacy).verdict()).isEqualTo(DriverLoad.Verdict.COMPAT_UNSUPPORTED);
    }

    /** An image that configures its old compat libraries itself (NVIDIA's hook would not): they shadow a newer driver. */
    @Test
    void compatOlderThanTheModuleShadowsTheNodesDriverForNothing() throws Exception {
        Path root = container(LIB);
        ImageRoots.compat(root, "11.4", RealDriver.legacyLibraryDir().resolve("libcuda.so." + legacy));
        Files.writeString(root.resolve("etc/ld.so.conf.d/000_cuda-compat.conf"), "/usr/local/cuda/compat\n");
        ImageRoots.ldconfig(root);

        DriverLoad load = look(root, LIB, host);

        assertThat(load.verdict()).isEqualTo(DriverLoad.Verdict.COMPAT_OLDER);
        assertThat(load.principal().get().compat().get().byHook()).isFalse();
        assertThat(DriverLoadText.sentence(load)).startsWith("the image's CUDA forward-compatibility libcuda.so.1 (" + legacy
                + ") is older than the node's driver " + host + " and is loaded in its place");
        assertThat(DriverLoadText.advice(load)).contains("error 803");
    }

    @Test
    void withoutACacheTheDefaultDirectoriesAnswerAndNothingFoundIsNone() throws Exception {
        Path root = container(LIB);

        assertThat(look(root, LIB, host).principal().get().via()).isEqualTo("the loader's default directory " + LIB);
        Files.delete(root.resolve(LIB.substring(1)).resolve("libcuda.so.1"));
        Files.delete(root.resolve(LIB.substring(1)).resolve("libnvidia-ml.so.1"));
        assertThat(look(root, LIB, host).verdict()).isEqualTo(DriverLoad.Verdict.NONE);
    }

    @Test
    void aLinkLoopOrALinkOutOfTheRootEndsInsideIt() throws Exception {
        Path root = ImageRoots.debian(dir.resolve("c"));
        Path lib = root.resolve(LIB.substring(1));
        Files.createSymbolicLink(lib.resolve("loop"), Path.of("loop"));
        Files.createSymbolicLink(lib.resolve("out"), Path.of("../../../../../../etc/passwd"));
        Files.writeString(root.resolve("etc/passwd"), "root:x:0:0::/root:/bin/sh\n");
        try (RootFs fs = RootFs.openHostDirectory(root.toString(), PathResolver.detect(false))) {
            assertThat(LoaderView.follow(fs, LIB + "/loop")).isEmpty();
            assertThat(LoaderView.follow(fs, LIB + "/out")).contains("/etc/passwd");
        }
        assertThat(LoaderView.normalize("/usr/lib/../../..//lib/./x")).isEqualTo("/lib/x");
    }
}
