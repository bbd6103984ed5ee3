package io.driveralias.agent.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Test images without a registry: a root filesystem assembled here (busybox, the host's
 * glibc loader and libc, the host's static ldconfig, a stand-in {@code nvidia-smi} compiled
 * against {@code libnvidia-ml.so.1}) and turned into an image with {@code docker import}.
 * Stand-in driver libraries are compiled with the real SONAMEs and mounted read-only into
 * containers at their versioned names, as the NVIDIA runtime does.
 */
public final class TestImages {

    public static final String VERSION = "535.104.05";
    public static final String DEBIAN_LIB = "/usr/lib/x86_64-linux-gnu";
    public static final String RHEL_LIB = "/usr/lib64";

    /** The stand-in driver: file name -> SONAME. */
    public static final Map<String, String> DRIVER = Map.of(
            "libcuda.so." + VERSION, "libcuda.so.1",
            "libnvidia-ml.so." + VERSION, "libnvidia-ml.so.1",
            "libnvidia-nvvm.so." + VERSION, "libnvidia-nvvm.so.4",
            "libnvidia-ptxjitcompiler.so." + VERSION, "libnvidia-ptxjitcompiler.so.1");

    private static final List<String> APPLETS = List.of("sh", "ls", "cat", "ln", "readlink", "sleep", "id", "true",
            "false", "mkdir", "test", "echo", "grep", "touch", "rm", "stat", "mkfifo", "env", "wc", "head");
    private static final Map<String, String> BUILT = new ConcurrentHashMap<>();
    private static final Map<String, Path> ROOTS = new ConcurrentHashMap<>();
    private static Path work;
    private static Path driverDir;

    private TestImages() {
    }

    private static synchronized Path work() {
        if (work == null) {
            try {
                work = Files.createTempDirectory("daa-images-");
                Path created = work;
                Runtime.getRuntime().addShutdownHook(new Thread(() -> Processes.run(List.of("rm", "-rf", created.toString()), 60)));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return work;
    }

    /** The host directory holding the stand-in driver files (compiled once). */
    public static synchronized Path driverDir() {
        if (driverDir == null) {
            // Laid out like a host library directory, as the NVIDIA runtime mounts from one.
            Path dir = work().resolve("host/usr/lib/x86_64-linux-gnu");
            for (Map.Entry<String, String> lib : DRIVER.entrySet()) {
                String symbol = lib.getKey().startsWith("libnvidia-ml") ? "nvmlInit_v2"
                        : lib.getKey().startsWith("libcuda") ? "cuInit" : "stand_in_" + lib.getKey().hashCode();
                compileLibrary(dir, lib.getKey(), lib.getValue(), "int " + symbol.replace('-', '_') + "(void) { return 0; }\n");
            }
            driverDir = dir;
        }
        return driverDir;
    }

    /**
     * The host directories of the test drivers, for the agent's {@code --host-lib-dir}: the
     * stand-in's, and the real NVIDIA packages' where fetched already (the agent aliases only
     * the host's own driver files, which it finds there).
     */
    public static List<String> hostLibraryDirectories() {
        List<String> dirs = new ArrayList<>(List.of(driverDir().toString()));
        RealDriver.fetchedLibraryRoot(RealDriver.Arch.AMD64).ifPresent(dir -> dirs.add(dir.toString()));
        return dirs;
    }

    /** The driver version the agent reports for {@link #hostLibraryDirectories()}: the newest there. */
    public static String hostDriverVersion() {
        return RealDriver.fetchedLibraryRoot(RealDriver.Arch.AMD64).isPresent()
                && io.driveralias.agent.core.DriverVersions.compareVersions(RealDriver.version(RealDriver.Arch.AMD64), VERSION) > 0
                ? RealDriver.version(RealDriver.Arch.AMD64) : VERSION;
    }

    /** {@code --host-lib-dir} arguments for {@link #hostLibraryDirectories()}. */
    public static List<String> hostLibraryArguments() {
        List<String> args = new ArrayList<>();
        for (String dir : hostLibraryDirectories()) {
            args.addAll(List.of("--host-lib-dir", dir));
        }
        return args;
    }

    /** docker run arguments that mount every driver file read-only into {@code libDir}. */
    public static List<String> driverMounts(String libDir) {
        List<String> args = new ArrayList<>();
        for (String file : DRIVER.keySet()) {
            args.add("-v");
            args.add(driverDir().resolve(file) + ":" + libDir + "/" + file + ":ro");
        }
        return args;
    }

    /**
     * An image whose dynamic loader searches {@code libDir} (Debian multiarch, or /usr/lib64
     * through ld.so.conf), with nvidia-smi linked against libnvidia-ml.so.1. {@code extra}
     * may add hostile content to the root before it is imported. Imported once into the shared
     * engine, each time into another.
     */
    public static String image(DockerHarness docker, String name, String libDir, RootCustomizer extra) {
        if (!docker.isShared()) {
            // Remembered by name for the shared engine alone: another engine imports it each time.
            return imageOn(docker, name, libDir, extra);
        }
        return BUILT.computeIfAbsent(name, n -> importInto(docker, rootTar(n, libDir, extra), n));
    }

    /** The same image imported into another engine, from its root's tar: the shared engine is not involved. */
    public static String imageOn(DockerHarness other, String name, String libDir, RootCustomizer extra) {
        return importInto(other, rootTar(name, libDir, extra), name);
    }

    @FunctionalInterface
    public interface RootCustomizer {
        void customize(Path root) throws IOException;
    }

    private static String importInto(DockerHarness docker, Path tar, String name) {
        String tag = "daa-test/" + name + ":1";
        docker.run("import", "--change", "ENV PATH=/usr/bin:/bin:/sbin", tar.toString(), tag);
        return tag;
    }

    /**
     * The image's root filesystem as a tar (built once per name), for engines that import it
     * their own way (containerd: {@link ContainerdHarness#importImage}).
     */
    public static Path rootTar(String name, String libDir, RootCustomizer extra) {
        return ROOTS.computeIfAbsent(name, n -> buildRoot(n, libDir, extra));
    }

    private static Path buildRoot(String name, String libDir, RootCustomizer extra) {
        try {
            Path root = work().resolve("rootfs-" + name);
            Path bin = Files.createDirectories(root.resolve("bin"));
            Files.copy(Path.of("/bin/busybox"), bin.resolve("busybox"));
            for (String applet : APPLETS) {
                Files.createSymbolicLink(bin.resolve(applet), Path.of("busybox"));
            }
            Path multiarch = Files.createDirectories(root.resolve("usr/lib/x86_64-linux-gnu"));
            Files.createDirectories(root.resolve("usr/lib64"));
            Files.copy(Path.of("/lib/x86_64-linux-gnu/libc.so.6"), multiarch.resolve("libc.so.6"));
            Files.copy(Path.of("/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"), multiarch.resolve("ld-linux-x86-64.so.2"));
            Files.createSymbolicLink(root.resolve("usr/lib64/ld-linux-x86-64.so.2"),
                    Path.of("../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"));
            Files.createSymbolicLink(root.resolve("lib"), Path.of("usr/lib"));
            Files.createSymbolicLink(root.resolve("lib64"), Path.of("usr/lib64"));
            Files.createDirectories(root.resolve("sbin"));
            Files.copy(Path.of("/sbin/ldconfig"), root.resolve("sbin/ldconfig"));
            Path etc = Files.createDirectories(root.resolve("etc"));
            Files.writeString(etc.resolve("ld.so.conf"), "/usr/lib64\n/usr/local/nvidia/lib64\n");
            Files.writeString(etc.resolve("passwd"), "root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/tmp:/bin/sh\n");
            Files.writeString(etc.resolve("group"), "root:x:0:\nuser:x:1000:\n");
            Files.createDirectories(root.resolve("tmp"));
            Files.createDirectories(root.resolve("usr/bin"));
            compileNvidiaSmi(root.resolve("usr/bin"));
            Files.createDirectories(root.resolve(libDir.substring(1)));
            // The image's loader cache, as a distribution's ldconfig leaves it (libc, the loader):
            // made before the customizer, so a hostile image never meets the host's ldconfig.
            Processes.check(List.of("ldconfig", "-X", "-r", root.toString()));
            extra.customize(root);
            Path tar = work().resolve(name + ".tar");
            Processes.check(List.of("tar", "--numeric-owner", "-C", root.toString(), "-cf", tar.toString(), "."));
            return tar;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A stand-in nvidia-smi: the dynamic loader must find libnvidia-ml.so.1 for it to run. */
    private static void compileNvidiaSmi(Path bin) throws IOException {
        Path src = work().resolve("nvidia-smi.c");
        Files.writeString(src, """
                #include <stdio.h>
                int nvmlInit_v2(void);
                int main(void) {
                    if (nvmlInit_v2() != 0) { return 1; }
                    puts("NVIDIA-SMI stand-in: NVML initialised");
                    return 0;
                }
                """);
        Processes.check(List.of("gcc", "-o", bin.resolve("nvidia-smi").toString(), src.toString(),
                driverDir().resolve("libnvidia-ml.so." + VERSION).toString()));
    }

    public static Path compileLibrary(Path dir, String fileName, String soname, String code) {
        try {
            Files.createDirectories(dir);
            Path src = dir.resolve(fileName + ".c");
            Files.writeString(src, code);
            Processes.check(List.of("gcc", "-shared", "-fPIC", "-Wl,-soname," + soname, "-o",
                    dir.resolve(fileName).toString(), src.toString()));
            Files.delete(src);
            return dir.resolve(fileName);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
