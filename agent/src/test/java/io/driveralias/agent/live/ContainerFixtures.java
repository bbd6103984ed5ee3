package io.driveralias.agent.live;

import io.driveralias.agent.core.AliasPlanner;
import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.ContainerScope;
import io.driveralias.agent.fs.HostRoot;
import io.driveralias.agent.fs.PathResolver;
import io.driveralias.agent.overlay.CreateTimeSeeder;
import io.driveralias.agent.overlay.HostDriver;
import io.driveralias.agent.repair.DriverLocator;
import io.driveralias.agent.repair.HostDriverFiles;
import io.driveralias.agent.repair.LoaderCache;
import io.driveralias.agent.repair.RootRepairer;
import io.driveralias.agent.repair.SonameCache;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Containers on disk for unit tests: each root is a plain directory that the fake runtime names
 * as the overlay's MergedDir (no /proc entry for its pid, so the agent opens the merged view),
 * with one driver file bind-mounted from the "host": a copy of the Java runtime's libjsig.so,
 * a real ELF file whose SONAME is libjsig.so, named like a driver library of version 535.104.05,
 * in a directory the agent is told is one of the host's library directories.
 */
final class ContainerFixtures {

    static final String VERSION = "535.104.05";
    static final String LIB = "/usr/lib64";
    static final String DRIVER_FILE = "libjsig.so." + VERSION;
    static final String ALIAS = "libjsig.so";
    private static final AtomicInteger NEXT = new AtomicInteger(1);

    private final Path dir;
    private final Path hostProc;
    private final Path hostDriver;

    ContainerFixtures(Path dir) throws IOException {
        this.dir = dir;
        this.hostProc = Files.createDirectories(dir.resolve("host-proc"));
        Path driverDir = Files.createDirectories(dir.resolve("host/usr/lib64"));
        this.hostDriver = driverDir.resolve(DRIVER_FILE);
        Files.copy(Path.of(System.getProperty("java.home"), "lib", "libjsig.so"), hostDriver);
    }

    static String newId() {
        byte[] bytes = new byte[32];
        int n = NEXT.getAndIncrement();
        bytes[0] = (byte) 0xc0;
        // Distinct in the first 12 hex digits, which name the container's directory.
        bytes[1] = (byte) (n >> 8);
        bytes[2] = (byte) n;
        return HexFormat.of().formatHex(bytes);
    }

    /** A running GPU container started at {@code startedAt}, its root on disk. */
    ContainerInfo gpuContainer(String id, Instant startedAt) throws IOException {
        Path merged = Files.createDirectories(dir.resolve(id.substring(0, 12)).resolve("merged"));
        Path lib = Files.createDirectories(merged.resolve(LIB.substring(1)));
        // A bind-mounted file shows in the merged directory as an empty placeholder.
        if (!Files.exists(lib.resolve(DRIVER_FILE))) {
            Files.createFile(lib.resolve(DRIVER_FILE));
        }
        return ContainerInfo.builder(id).name("c-" + id.substring(0, 6)).image("cuda:12").running(true)
                .pid(900_000 + NEXT.get()).startedAt(Optional.of(startedAt))
                .mounts(List.of(new ContainerInfo.Mount("bind", hostDriver.toString(), LIB + "/" + DRIVER_FILE, false)))
                .storage("overlay2").overlay(Optional.of(new ContainerInfo.OverlayLayers("", "", merged.toString())))
                .build();
    }

    /**
     * A created GPU container of overlay2 storage, not started: its image layer has the
     * library directory, its upper layer is empty, its merged directory not mounted yet.
     */
    ContainerInfo createdOnOverlay(String id, String image, boolean readOnlyRootfs) throws IOException {
        Path layers = dir.resolve(id.substring(0, 12));
        Path upper = Files.createDirectories(layers.resolve("upper"));
        Path lower = Files.createDirectories(layers.resolve("lower"));
        Files.createDirectories(lower.resolve(LIB.substring(1)));
        return ContainerInfo.builder(id).name("c-" + id.substring(0, 6)).image(image)
                .mounts(List.of(new ContainerInfo.Mount("bind", hostDriver.toString(), LIB + "/" + DRIVER_FILE, false)))
                .storage("overlay2").overlay(Optional.of(new ContainerInfo.OverlayLayers(upper.toString(), lower.toString(),
                        layers.resolve("merged").toString())))
                .readOnlyRootfs(readOnlyRootfs).build();
    }

    /** The host's own driver file. */
    Path hostDriverFile() {
        return hostDriver;
    }

    /** The host's driver as the agent finds it: the fixtures' host library directory. */
    HostDriverFiles hostFiles() {
        HostRoot host = new HostRoot(hostProc.toString(), PathResolver.detect(false));
        return new HostDriverFiles(host, List.of(hostDriver.getParent().toString()), Optional.of(VERSION));
    }

    CreateTimeSeeder seeder() {
        HostDriverFiles files = hostFiles();
        HostDriver driver = new HostDriver() {
            @Override
            public Optional<String> sonameAt(String hostPath) {
                return files.atHostPath(hostPath).map(HostDriverFiles.HostDriverFile::soname);
            }

            @Override
            public java.util.Map<String, String> runtimeFiles(io.driveralias.agent.core.GpuRequest gpu) {
                return java.util.Map.of();
            }

            @Override
            public Optional<String> driverVersion() {
                return files.driverVersion();
            }
        };
        return new CreateTimeSeeder(driver, new AliasPlanner(false), PathResolver.detect(false),
                new CreateTimeSeeder.Settings(List.of(LIB)), LoaderCache.OFF);
    }

    ContainerRepairer repairer(ContainerRuntime docker, CreateTimeSeeder seeder, ContainerScope scope) {
        PathResolver resolver = PathResolver.detect(false);
        HostDriverFiles files = hostFiles();
        return new ContainerRepairer(docker, new ContainerRoots(hostProc.toString(), resolver),
                new RootRepairer(new DriverLocator(new SonameCache(64), new HostRoot(hostProc.toString(), resolver), files),
                        new AliasPlanner(false)),
                scope, new ContainerRepairer.Settings(List.of(LIB), path -> files.atHostPath(path).isPresent()), seeder,
                Clock.systemUTC());
    }

    /** The same container, exited. */
    static ContainerInfo exited(ContainerInfo info) {
        return info.toBuilder().running(false).pid(0).build();
    }

    /** The same container, started again later (new pid, new start). */
    static ContainerInfo restarted(ContainerInfo info) {
        return info.toBuilder().running(true).pid(info.pid() + 1).startedAt(info.startedAt().map(s -> s.plusSeconds(5)))
                .build();
    }

    /** The container's library directory on disk. */
    Path libraryDirectory(ContainerInfo info) {
        return Path.of(info.overlay().orElseThrow().mergedDir()).resolve(LIB.substring(1));
    }

    ContainerRepairer repairer(ContainerRuntime docker, CreateTimeSeeder seeder) {
        return repairer(docker, seeder, new ContainerScope(List.of(), List.of()));
    }
}
