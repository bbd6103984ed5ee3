package io.driveralias.agent.repair;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.fs.FileStat;
import io.driveralias.agent.fs.HostRoot;
import io.driveralias.agent.fs.Libc;
import io.driveralias.agent.fs.OpenFlags;
import io.driveralias.agent.fs.PathResolver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The host's driver files as the agent finds them itself, and how a file in a container is
 * told to be one of them: by device and inode, never by name or path. The "driver" is the
 * Java runtime's libjsig.so (a real ELF file, SONAME libjsig.so) under driver names.
 */
class HostDriverFilesTest {

    private static final String V = "535.104.05";

    @TempDir
    Path dir;

    private Path lib;
    private final AtomicLong now = new AtomicLong(1_000_000_000_000L);
    private HostRoot host;

    @BeforeEach
    void setUp() throws Exception {
        lib = Files.createDirectories(dir.resolve("usr/lib/x86_64-linux-gnu"));
        // Where HostRoot finds no <proc>/1/root it falls back to "/": the paths here are absolute.
        host = new HostRoot(dir.resolve("no-proc").toString(), PathResolver.detect(false));
    }

    private Path driverFile(Path directory, String name) throws Exception {
        return Files.copy(Path.of(System.getProperty("java.home"), "lib", "libjsig.so"),
                Files.createDirectories(directory).resolve(name));
    }

    private HostDriverFiles files(Optional<String> version) {
        return new HostDriverFiles(host, List.of(lib.toString(), dir.resolve("usr/lib64").toString()), version, now::get);
    }

    private static FileStat stat(Path file) throws Exception {
        int fd = Libc.openHost(file.toString(), OpenFlags.O_PATH);
        try {
            return Libc.statx(fd, "", false);
        } finally {
            Libc.close(fd);
        }
    }

    @Test
    void theDriverIsFoundWhereDistributionsPutItAndKnownByItsIdentityOnly() throws Exception {
        Path cuda = driverFile(lib, "libcuda.so." + V);
        // Debian: the files in nvidia/current, reached through alternative links.
        Path nvml = driverFile(lib.resolve("nvidia/current"), "libnvidia-ml.so." + V);
        Files.createSymbolicLink(lib.resolve("libnvidia-ml.so." + V), Path.of("nvidia/current/libnvidia-ml.so." + V));
        driverFile(lib, "libz.so.1.2.13");
        HostDriverFiles files = files(Optional.empty());

        assertThat(files.driverVersion()).contains(V);
        assertThat(files.all()).extracting(HostDriverFiles.HostDriverFile::name)
                .containsExactlyInAnyOrder("libcuda.so." + V, "libnvidia-ml.so." + V);
        assertThat(files.identify(stat(cuda), "anything")).get().extracting(HostDriverFiles.HostDriverFile::soname)
                .isEqualTo("libjsig.so");
        assertThat(files.identify(stat(nvml), "libnvidia-ml.so." + V)).isPresent();
        // A hard link is the file itself; a copy, however named and wherever it lies, is not.
        Path linked = Files.createLink(Files.createDirectories(dir.resolve("elsewhere")).resolve("x"), cuda);
        assertThat(files.identify(stat(linked), "x")).isPresent();
        Path copy = driverFile(dir.resolve("volumes/v/usr/lib/x86_64-linux-gnu"), "libcuda.so." + V);
        assertThat(files.identify(stat(copy), "libcuda.so." + V)).isEmpty();
        assertThat(files.atHostPath(copy.toString())).isEmpty();
        assertThat(files.atHostPath(linked.toString())).isPresent();
    }

    @Test
    void onlyTheDriversVersionCounts() throws Exception {
        driverFile(lib, "libcuda.so." + V);
        Path old = driverFile(lib, "libcuda.so.470.57.02");
        HostDriverFiles configured = files(Optional.of(V));

        assertThat(configured.identify(stat(old), "libcuda.so.470.57.02")).isEmpty();
        assertThat(configured.all()).hasSize(1);
    }

    @Test
    void theLoadedModulesFilesAreTheDriverWhereTheHostHasThem() throws Exception {
        Path current = driverFile(lib, "libcuda.so." + V);
        Path old = driverFile(lib, "libcuda.so.470.57.02");
        HostDriverFiles files = new HostDriverFiles(host, List.of(lib.toString()), Optional.empty(), () -> Optional.of(V),
                now::get, v -> { });

        assertThat(files.identify(stat(current), "x")).isPresent();
        assertThat(files.identify(stat(old), "x")).as("another version than the module's").isEmpty();
        assertThat(files.driverVersion()).contains(V);
        assertThat(files.userSpaceVersions()).containsExactlyInAnyOrder(V, "470.57.02");
    }

    /**
     * The driver's packages upgraded and the module not reloaded: the host's files are another
     * version than the module. They are still the host's driver (a mismatch to tell, not "no driver").
     */
    @Test
    void aModuleWhoseFilesAreGoneLeavesTheHostsFilesTheDriverAndTellsTheirVersion() throws Exception {
        Path upgraded = driverFile(lib, "libcuda.so.535.183.01");
        driverFile(lib, "libnvidia-ml.so.535.183.01");
        HostDriverFiles files = new HostDriverFiles(host, List.of(lib.toString()), Optional.empty(), () -> Optional.of(V),
                now::get, v -> { });

        assertThat(files.foundCount()).isEqualTo(2);
        assertThat(files.identify(stat(upgraded), "x")).isPresent();
        assertThat(files.driverVersion()).contains("535.183.01");
        assertThat(files.userSpaceVersions()).containsExactly("535.183.01");
    }

    @Test
    void aRefreshLooksAgainOnlyOnceTheIntervalIsOver() throws Exception {
        driverFile(lib, "libcuda.so." + V);
        HostDriverFiles files = files(Optional.empty());
        assertThat(files.userSpaceVersions()).containsExactly(V);
        Files.delete(lib.resolve("libcuda.so." + V));
        driverFile(lib, "libcuda.so.535.183.01");

        assertThat(files.refresh()).isFalse();
        assertThat(files.userSpaceVersions()).containsExactly(V);
        now.addAndGet(HostDriverFiles.RESCAN_INTERVAL_NANOS);
        assertThat(files.refresh()).isTrue();
        assertThat(files.userSpaceVersions()).containsExactly("535.183.01");
    }

    @Test
    void twoDriversSideBySideBothCountAndTheNewerIsTheVersion() throws Exception {
        Path current = driverFile(lib, "libcuda.so." + V);
        Path old = driverFile(dir.resolve("usr/lib64"), "libnvidia-ml.so.470.57.02");
        Path notDriver = driverFile(lib, "libfoo.so.100.2.3");
        HostDriverFiles files = files(Optional.empty());

        assertThat(files.driverVersion()).contains(V);
        assertThat(files.identify(stat(current), "x")).isPresent();
        assertThat(files.identify(stat(old), "x")).isPresent();
        assertThat(files.identify(stat(notDriver), "x")).as("no driver library carries that version").isEmpty();
    }

    @Test
    void anUpgradedDriverIsFoundOnAMissButNotMoreOftenThanTheRescanInterval() throws Exception {
        driverFile(lib, "libcuda.so." + V);
        HostDriverFiles files = files(Optional.empty());
        assertThat(files.driverVersion()).contains(V);

        Path upgraded = driverFile(dir.resolve("usr/lib64"), "libcuda.so.550.54.15");
        Files.delete(lib.resolve("libcuda.so." + V));
        assertThat(files.identify(stat(upgraded), upgraded.getFileName().toString())).as("too soon to look again")
                .isEmpty();

        now.addAndGet(HostDriverFiles.RESCAN_INTERVAL_NANOS);
        assertThat(files.identify(stat(upgraded), upgraded.getFileName().toString())).isPresent();
        assertThat(files.driverVersion()).contains("550.54.15");
    }

    @Test
    void aMissOnAFileThatCannotBeTheDriversCostsNoRescan() throws Exception {
        driverFile(lib, "libcuda.so." + V);
        HostDriverFiles files = files(Optional.empty());
        files.driverVersion();
        Path mine = driverFile(dir.resolve("image/lib"), "libstdc++.so.6.0.30");
        Path late = driverFile(lib, "libnvidia-ptxjitcompiler.so." + V);
        now.addAndGet(HostDriverFiles.RESCAN_INTERVAL_NANOS);

        assertThat(files.identify(stat(mine), "libstdc++.so.6.0.30")).isEmpty();
        assertThat(files.all()).as("no rescan for a name no driver file has").hasSize(1);
        assertThat(files.identify(stat(late), late.getFileName().toString())).isPresent();
    }

    @Test
    void aHostWithoutTheDriverFindsNothingAndSaysSo() {
        HostDriverFiles files = files(Optional.empty());

        assertThat(files.all()).isEmpty();
        assertThat(files.driverVersion()).isEmpty();
        assertThat(files.atHostPath("/usr/lib/x86_64-linux-gnu/libcuda.so." + V)).isEmpty();
    }
}
