package io.driveralias.agent.overlay;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.core.AliasPlanner;
import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.GpuRequest;
import io.driveralias.agent.core.LateRepairCause;
import io.driveralias.agent.core.LinkAction;
import io.driveralias.agent.fs.HostRoot;
import io.driveralias.agent.fs.PathResolver;
import io.driveralias.agent.repair.HostDriverFiles;
import io.driveralias.agent.repair.LoaderCache;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The decisions of repair before start, on real layer directories: a created container's
 * aliases go into its own upper layer, and only for driver files it declares; nothing else is
 * ever written, and nothing through a symlink of an image.
 */
class CreateTimeSeederTest {

    private static final String VERSION = "535.104.05";
    private static final String FILE = "libjsig.so." + VERSION;
    private static final List<String> LIBRARY_DIRECTORIES = List.of("/usr/lib/x86_64-linux-gnu", "/usr/lib64");

    @TempDir
    Path dir;

    private Path upper;
    private Path lower;
    private Path merged;
    private Path hostDriver;
    private CreateTimeSeeder seeder;
    /** The same seeder, with the agent's own loader cache writer. */
    private CreateTimeSeeder caching;
    /** What earlier containers taught the agent of the runtime's driver files. */
    private Map<String, String> learned = Map.of();

    @BeforeEach
    void setUp() throws IOException {
        upper = Files.createDirectories(dir.resolve("layers/upper"));
        lower = Files.createDirectories(dir.resolve("layers/lower"));
        merged = dir.resolve("layers/merged");
        Path lib = Files.createDirectories(lower.resolve("usr/lib64"));
        Files.setPosixFilePermissions(lib, PosixFilePermissions.fromString("rwxr-x---"));
        Path host = Files.createDirectories(dir.resolve("host/lib"));
        hostDriver = Files.copy(Path.of(System.getProperty("java.home"), "lib", "libjsig.so"), host.resolve(FILE));
        PathResolver resolver = PathResolver.detect(false);
        HostDriverFiles hostFiles = new HostDriverFiles(new HostRoot(dir.resolve("no-proc").toString(), resolver),
                List.of(host.toString()), Optional.of(VERSION));
        HostDriver driver = new HostDriver() {
            @Override
            public Optional<String> sonameAt(String hostPath) {
                return hostFiles.atHostPath(hostPath).map(HostDriverFiles.HostDriverFile::soname);
            }

            @Override
            public Map<String, String> runtimeFiles(GpuRequest gpu) {
                return learned;
            }

            @Override
            public Optional<String> driverVersion() {
                return hostFiles.driverVersion();
            }
        };
        seeder = new CreateTimeSeeder(driver, new AliasPlanner(false), resolver,
                new CreateTimeSeeder.Settings(LIBRARY_DIRECTORIES), LoaderCache.OFF);
        caching = new CreateTimeSeeder(driver, new AliasPlanner(false), resolver,
                new CreateTimeSeeder.Settings(LIBRARY_DIRECTORIES), new io.driveralias.agent.ldcache.LdSoCache());
    }

    private ContainerInfo created(List<ContainerInfo.Mount> mounts, String driver) {
        Optional<ContainerInfo.OverlayLayers> overlay = driver.equals("overlay2")
                ? Optional.of(new ContainerInfo.OverlayLayers(upper.toString(), lower.toString(), merged.toString()))
                : Optional.empty();
        return ContainerInfo.builder("c0ffee").name("job").image("cuda").mounts(mounts).storage(driver).overlay(overlay)
                .build();
    }

    private ContainerInfo gpuRequest() {
        return created(List.of(new ContainerInfo.Mount("bind", hostDriver.toString(), "/usr/lib64/" + FILE, false)),
                "overlay2");
    }

    private List<Path> upperContents() throws IOException {
        try (Stream<Path> all = Files.walk(upper)) {
            return all.filter(p -> !p.equals(upper)).toList();
        }
    }

    @Test
    void aDeclaredDriverFileGetsItsAliasInTheUpperLayerBeforeTheStart() throws IOException {
        List<LinkAction> links = seeder.seed(gpuRequest()).links();

        assertThat(links).extracting(LinkAction::name).containsExactly("libjsig.so");
        Path link = upper.resolve("usr/lib64/libjsig.so");
        assertThat(Files.readSymbolicLink(link)).hasToString(FILE);
        // The directory made in the upper layer is the image's, as overlayfs will show it.
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(upper.resolve("usr/lib64"))))
                .isEqualTo("rwxr-x---");
        try (Stream<Path> image = Files.list(lower.resolve("usr/lib64"))) {
            assertThat(image).as("the image's layer is never written").isEmpty();
        }
    }

    private ContainerInfo runtimeRequest(GpuRequest gpu) {
        ContainerInfo c = created(List.of(), "overlay2");
        return c.toBuilder().gpu(gpu).build();
    }

    @Test
    void aContainerAskingTheGpuRuntimeGetsAliasesToTheFilesEarlierContainersReceived() throws IOException {
        learned = Map.of(FILE, "libjsig.so", "libjsig.so.470.57.02", "libjsig.so");

        GpuRequest runtime = new GpuRequest("nvidia", true, Optional.of("all"), false, false, "");
        List<LinkAction> links = seeder.seed(runtimeRequest(runtime)).links();

        // This image has no multiarch directory: the runtime puts its files into /usr/lib64.
        assertThat(links).extracting(LinkAction::name).containsExactly("libjsig.so");
        assertThat(Files.readSymbolicLink(upper.resolve("usr/lib64/libjsig.so"))).as("to the configured version only")
                .hasToString(FILE);
        assertThat(upper.resolve("usr/lib64/" + FILE)).as("the file itself is the runtime's to add").doesNotExist();
    }

    @Test
    void aRuntimeRequestBeforeAnyContainerShowedTheFilesOrWithoutAGpuRuntimeWritesNothing() throws IOException {
        assertThat(seeder.seed(runtimeRequest(new GpuRequest("nvidia", true, Optional.of("all"), false, false, "")))
                .links()).isEmpty();

        learned = Map.of(FILE, "libjsig.so");
        assertThat(seeder.seed(runtimeRequest(new GpuRequest("runc", false, Optional.of("all"), false, false, ""))).links()).isEmpty();
        assertThat(seeder.seed(runtimeRequest(new GpuRequest("nvidia", true, Optional.of("void"), false, false, ""))).links()).isEmpty();
        assertThat(seeder.seed(runtimeRequest(GpuRequest.NONE)).links()).isEmpty();
        assertThat(upperContents()).isEmpty();
    }

    @Test
    void aLearnedNameThatCouldRedirectTheLoaderIsNotLinked() throws IOException {
        learned = Map.of(FILE, "libc.so.6");

        assertThat(seeder.seed(runtimeRequest(new GpuRequest("runc", false, Optional.empty(), true, false, ""))).links()).isEmpty();
        assertThat(upperContents()).isEmpty();
    }

    @Test
    void aContainerWithoutAGpuRequestIsNeverTouched() throws IOException {
        assertThat(seeder.seed(created(List.of(), "overlay2")).links()).isEmpty();
        Path hosts = Files.writeString(dir.resolve("hosts"), "127.0.0.1 localhost\n");
        assertThat(seeder.seed(created(List.of(new ContainerInfo.Mount("bind", hosts.toString(), "/etc/hosts", true),
                new ContainerInfo.Mount("volume", hostDriver.toString(), "/usr/lib64/" + FILE, true)), "overlay2")).links())
                .isEmpty();
        // A copy of the host's driver file elsewhere is not the host's driver file, whatever its
        // name and path: a volume or an emptyDir of a neighbour, laid out like a library directory.
        Path volume = Files.createDirectories(dir.resolve("volumes/v/_data/usr/lib/x86_64-linux-gnu"));
        Path copy = Files.copy(hostDriver, volume.resolve(FILE));
        assertThat(seeder.seed(created(List.of(new ContainerInfo.Mount("bind", copy.toString(),
                "/usr/lib64/" + FILE, false)), "overlay2")).links()).isEmpty();
        Path renamed = Files.copy(hostDriver, volume.resolve("libz.so." + VERSION));
        assertThat(seeder.seed(created(List.of(new ContainerInfo.Mount("bind", renamed.toString(),
                "/usr/lib64/libz.so." + VERSION, false)), "overlay2")).links()).isEmpty();
        assertThat(upperContents()).isEmpty();
    }

    @Test
    void aHardLinkOfTheHostsFileIsTheHostsFile() throws IOException {
        // Same device and inode: the file itself, under any path (nvidia-docker 1's volume did this).
        Path linked = Files.createLink(Files.createDirectories(dir.resolve("host/other")).resolve(FILE), hostDriver);

        assertThat(seeder.seed(created(List.of(new ContainerInfo.Mount("bind", linked.toString(),
                "/usr/lib64/" + FILE, false)), "overlay2")).links()).extracting(LinkAction::name).containsExactly("libjsig.so");
    }

    @Test
    void aContainerWhoseRootIsAlreadyMountedOrThatRanIsLeftToTheStartPath() throws IOException {
        ContainerInfo c = gpuRequest();
        ContainerInfo started = c.toBuilder().startedAt(Optional.of(Instant.parse("2026-11-30T10:00:00Z"))).build();
        assertThat(seeder.seed(started).links()).isEmpty();

        Files.createDirectory(merged);
        assertThat(seeder.seed(c).links()).isEmpty();
        assertThat(upperContents()).isEmpty();
    }

    @Test
    void theImagesLoaderCacheListsTheAliasesInTheWritableLayerBeforeTheStart() throws IOException {
        // The image's layer has /etc and a real cache (this machine's, made by its ldconfig).
        Path etc = Files.createDirectories(lower.resolve("etc"));
        Files.setPosixFilePermissions(etc, PosixFilePermissions.fromString("rwxr-x--x"));
        Path lowerCache = Files.copy(Path.of("/etc/ld.so.cache"), etc.resolve("ld.so.cache"));
        byte[] image = Files.readAllBytes(lowerCache);

        assertThat(caching.seed(gpuRequest()).links()).extracting(LinkAction::name).containsExactly("libjsig.so");

        Path seeded = upper.resolve("etc/ld.so.cache");
        assertThat(seeded).isRegularFile();
        String listed = io.driveralias.agent.testing.Processes.run(List.of("ldconfig", "-p", "-C", seeded.toString()))
                .output();
        assertThat(listed).as("glibc's ldconfig -p reads the seeded cache").contains("libjsig.so (libc6,x86-64) => /usr/lib64/libjsig.so");
        assertThat(Files.readAllBytes(lowerCache)).as("the image's layer is never written").isEqualTo(image);
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(upper.resolve("etc"))))
                .as("the writable layer's /etc is the image's, as overlayfs will show it").isEqualTo("rwxr-x--x");
        // Seeded again (a second create event): nothing changes, nothing is left over.
        caching.seed(gpuRequest());
        try (Stream<Path> files = Files.list(upper.resolve("etc"))) {
            assertThat(files).extracting(f -> f.getFileName().toString()).containsExactly("ld.so.cache");
        }
    }

    @Test
    void aGpuContainerThatCannotBeSeededSaysWhyAndOneWithoutAGpuRequestSaysNothing() throws IOException {
        GpuRequest runtime = new GpuRequest("nvidia", true, Optional.of("all"), false, false, "");
        assertThat(seeder.seed(runtimeRequest(runtime)).skipped()).as("nothing learned yet")
                .contains(LateRepairCause.RUNTIME_FILES_UNKNOWN);
        assertThat(seeder.seed(created(gpuRequest().mounts(), "vfs")).skipped()).contains(LateRepairCause.NO_OVERLAY);
        assertThat(seeder.seed(created(List.of(), "overlay2"))).as("no GPU request")
                .isEqualTo(Seeding.NOTHING_TO_DO);
        assertThat(seeder.seed(gpuRequest()).skipped()).isEmpty();
    }

    @Test
    void storageWithoutOverlayLayersIsLeftToTheStartPath() throws IOException {
        ContainerInfo c = gpuRequest();
        assertThat(seeder.seed(created(c.mounts(), "vfs")).links()).isEmpty();
        assertThat(upperContents()).isEmpty();
    }

    @Test
    void anImageSymlinkOnThePathIsNeverFollowed() throws IOException {
        // The image's /usr/lib64 points elsewhere on the host: writing through it would land there.
        Path elsewhere = Files.createDirectories(dir.resolve("host/elsewhere"));
        try (Stream<Path> paths = Files.walk(lower.resolve("usr/lib64"))) {
            paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
        Files.createSymbolicLink(lower.resolve("usr/lib64"), elsewhere);

        seeder.seed(gpuRequest()).links();

        try (Stream<Path> there = Files.list(elsewhere)) {
            assertThat(there).isEmpty();
        }
        assertThat(upper.resolve("usr/lib64")).doesNotExist();
    }

    /**
     * Whether the container's program has provably not begun, from the runtime's task directory:
     * no task, no pid yet, or a pid whose process is still runc's init; a process running any
     * other program (this JVM) or a pid that is not one proves nothing.
     */
    @Test
    void theTaskDirectoryTellsWhetherTheProgramBegan() throws Exception {
        Path task = dir.resolve("task");
        assertThat(seeder.beforeProgram("")).as("a runtime that keeps no task directory").isFalse();
        assertThat(seeder.beforeProgram(task.toString())).as("no task yet").isTrue();
        Files.createDirectories(task);
        assertThat(seeder.beforeProgram(task.toString())).as("no process yet").isTrue();
        Files.writeString(task.resolve("init.pid"), Long.toString(ProcessHandle.current().pid()));
        assertThat(seeder.beforeProgram(task.toString())).as("a process running its program").isFalse();
        Files.writeString(task.resolve("init.pid"), "not a pid");
        assertThat(seeder.beforeProgram(task.toString())).isFalse();
        Process init = new ProcessBuilder("python3", "-c", "import ctypes, time; ctypes.CDLL(None).prctl(15, b'runc:[2:INIT]', 0, 0, 0);"
                + " print('named', flush=True); time.sleep(30)").start();
        try {
            assertThat(new String(init.getInputStream().readNBytes(6), java.nio.charset.StandardCharsets.US_ASCII)).isEqualTo("named\n");
            Files.writeString(task.resolve("init.pid"), Long.toString(init.pid()));
            assertThat(seeder.beforeProgram(task.toString())).as("runc's init, waiting for its start").isTrue();
        } finally {
            init.destroyForcibly().waitFor();
        }
    }
}
