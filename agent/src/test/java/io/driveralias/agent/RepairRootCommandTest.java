package io.driveralias.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.driveralias.agent.testing.NativeLibraries;
import io.driveralias.agent.testing.Processes;
import io.driveralias.agent.testing.TreeSnapshot;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code repair --root} end to end, on real trees with real ELF files, through both
 * resolvers. Every hostile case checks that a sentinel directory outside the root, full of
 * driver-looking files and link targets, is exactly as it was.
 */
@ParameterizedClass(name = "resolver={0}")
@ValueSource(strings = {"auto", "walk"})
@Timeout(60)
class RepairRootCommandTest {

    private static final String V = "535.104.05";
    private static final String DEBIAN = "usr/lib/x86_64-linux-gnu";
    private static final String RHEL = "usr/lib64";

    /** SONAMEs as the 535 driver has them: not all .1, one with none needed. */
    private static final Map<String, String> DRIVER = Map.of(
            "libcuda.so." + V, "libcuda.so.1",
            "libnvidia-ml.so." + V, "libnvidia-ml.so.1",
            "libnvidia-nvvm.so." + V, "libnvidia-nvvm.so.4",
            "libGLX_nvidia.so." + V, "libGLX_nvidia.so.0",
            "libGLESv2_nvidia.so." + V, "libGLESv2_nvidia.so.2",
            "libnvidia-glcore.so." + V, "libnvidia-glcore.so." + V);

    @TempDir
    static Path compiled;

    @Parameter
    String resolver;

    @TempDir
    Path tmp;

    Path root;
    Path sentinel;
    Map<String, String> sentinelBefore;

    @BeforeAll
    static void compileDriver() {
        DRIVER.forEach((file, soname) -> NativeLibraries.compile(compiled, file, soname));
        NativeLibraries.compile(compiled, "libstdc++.so.6.0.30", "libstdc++.so.6");
    }

    @BeforeEach
    void makeTrees() throws IOException {
        root = Files.createDirectories(tmp.resolve("root"));
        sentinel = Files.createDirectories(tmp.resolve("sentinel"));
        // Outside the root: things a confused agent would love to link or overwrite.
        NativeLibraries.copy(compiled.resolve("libcuda.so." + V), sentinel, "libcuda.so." + V);
        Files.writeString(sentinel.resolve("victim"), "host file");
        Files.createSymbolicLink(sentinel.resolve("libnvidia-ml.so.1"), Path.of("nowhere"));
        sentinelBefore = TreeSnapshot.of(sentinel);
    }

    private void install(String dir, String... files) {
        for (String file : files) {
            NativeLibraries.copy(compiled.resolve(file), root.resolve(dir), file);
        }
    }

    private void installDriver(String dir) {
        install(dir, DRIVER.keySet().toArray(String[]::new));
    }

    private record Run(int exit, String out, String err) {
    }

    private Run repair(String... extra) {
        List<String> args = new ArrayList<>(List.of("repair", "--root", root.toString(), "--resolver", resolver));
        args.addAll(List.of(extra));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = Main.run(args, Map.of(), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private String link(String path) throws IOException {
        return Files.readSymbolicLink(root.resolve(path)).toString();
    }

    private void assertSentinelUntouched() {
        assertThat(TreeSnapshot.of(sentinel)).as("nothing outside the root changed").isEqualTo(sentinelBefore);
    }

    @Test
    void repairsDebianAndRhelLayoutsAndASecondRunChangesNothing() throws IOException {
        installDriver(DEBIAN);
        installDriver(RHEL);
        install(DEBIAN, "libstdc++.so.6.0.30");

        Run first = repair();

        assertThat(first.exit()).as(first.out() + first.err()).isZero();
        for (String dir : List.of(DEBIAN, RHEL)) {
            assertThat(link(dir + "/libcuda.so.1")).isEqualTo("libcuda.so." + V);
            assertThat(link(dir + "/libnvidia-ml.so.1")).isEqualTo("libnvidia-ml.so." + V);
            assertThat(link(dir + "/libnvidia-nvvm.so.4")).isEqualTo("libnvidia-nvvm.so." + V);
            assertThat(link(dir + "/libGLX_nvidia.so.0")).isEqualTo("libGLX_nvidia.so." + V);
            assertThat(link(dir + "/libGLESv2_nvidia.so.2")).isEqualTo("libGLESv2_nvidia.so." + V);
            assertThat(root.resolve(dir + "/libcuda.so")).doesNotExist();
        }
        assertThat(root.resolve(DEBIAN + "/libstdc++.so.6")).as("not a driver library").doesNotExist();
        assertThat(first.out()).contains("created       /usr/lib64/libcuda.so.1 -> libcuda.so." + V)
                .contains("driver " + V + ": 10 created, 0 replaced");

        Map<String, String> after = TreeSnapshot.of(root);
        Run second = repair();

        assertThat(second.exit()).isZero();
        assertThat(second.out()).contains("0 created, 0 replaced, 10 ok").doesNotContain("created  ");
        assertThat(TreeSnapshot.of(root)).isEqualTo(after);
    }

    @Test
    void dryRunPrintsThePlanAndChangesNothing() {
        installDriver(DEBIAN);
        Map<String, String> before = TreeSnapshot.of(root);

        Run run = repair("--dry-run");

        assertThat(run.exit()).isEqualTo(1);
        assertThat(run.out()).contains("would create  /usr/lib/x86_64-linux-gnu/libcuda.so.1 -> libcuda.so." + V);
        assertThat(TreeSnapshot.of(root)).isEqualTo(before);
    }

    @Test
    void jsonOutputAndDevLinks() throws IOException {
        installDriver(DEBIAN);

        Run run = repair("--json", "--dev-links");

        JsonNode json = new ObjectMapper().readTree(run.out());
        assertThat(json.get("driverVersion").asText()).isEqualTo(V);
        assertThat(json.get("outcome").asText()).isEqualTo("repaired");
        assertThat(json.get("links")).anySatisfy(l -> {
            assertThat(l.get("path").asText()).isEqualTo("/usr/lib/x86_64-linux-gnu/libcuda.so");
            assertThat(l.get("target").asText()).isEqualTo("libcuda.so.1");
            assertThat(l.get("status").asText()).isEqualTo("applied");
        });
        assertThat(link(DEBIAN + "/libcuda.so")).isEqualTo("libcuda.so.1");
        assertThat(root.resolve(DEBIAN + "/libnvidia-glcore.so")).as("internal library").doesNotExist();
    }

    @Test
    void anExplicitDriverVersionIgnoresOtherVersions() throws IOException {
        installDriver(DEBIAN);
        NativeLibraries.copy(compiled.resolve("libcuda.so." + V), root.resolve(DEBIAN), "libcuda.so.550.54.14");

        Run run = repair("--driver-version", V);

        assertThat(run.exit()).isZero();
        assertThat(link(DEBIAN + "/libcuda.so.1")).isEqualTo("libcuda.so." + V);
    }

    @Test
    void libraryDirectoryAsAnAbsoluteSymlinkOutOfTheRoot() throws IOException {
        Files.createDirectories(root.resolve("usr"));
        Files.createSymbolicLink(root.resolve(RHEL), sentinel);

        Run run = repair();

        assertThat(run.out()).contains("no driver files found");
        assertSentinelUntouched();
    }

    @Test
    void libraryDirectoryAsDotDotOutOfTheRoot() throws IOException {
        installDriver(DEBIAN);
        Files.createSymbolicLink(root.resolve(RHEL), Path.of("../../../../../../.." + sentinel));

        Run run = repair();

        // ../.. stops at the root, so the link reaches <root>/<sentinel path>: not there.
        assertThat(run.exit()).as(run.out()).isZero();
        assertSentinelUntouched();
    }

    @Test
    void anAliasPlantedAsASymlinkToAHostFileIsAConflictNeitherFollowedNorReplaced() throws IOException {
        installDriver(DEBIAN);
        Files.createSymbolicLink(root.resolve(DEBIAN + "/libcuda.so.1"), sentinel.resolve("victim"));

        Run run = repair();

        // Not a link the agent could have made: the image's (or an attacker's) choice, reported.
        assertThat(run.exit()).as(run.out()).isEqualTo(1);
        assertThat(run.out()).contains("conflict      /usr/lib/x86_64-linux-gnu/libcuda.so.1")
                .contains("a link the agent did not make holds the alias name");
        assertThat(link(DEBIAN + "/libcuda.so.1")).isEqualTo(sentinel.resolve("victim").toString());
        assertSentinelUntouched();
    }

    @Test
    void aStaleAliasOfAnotherDriverVersionIsReplaced() throws IOException {
        installDriver(DEBIAN);
        Files.createSymbolicLink(root.resolve(DEBIAN + "/libcuda.so.1"), Path.of("libcuda.so.470.199.02"));

        Run run = repair();

        assertThat(run.exit()).as(run.out()).isZero();
        assertThat(run.out()).contains("replaced      /usr/lib/x86_64-linux-gnu/libcuda.so.1 -> libcuda.so." + V);
        assertThat(link(DEBIAN + "/libcuda.so.1")).isEqualTo("libcuda.so." + V);
    }

    @Test
    void whateverIsNotASymlinkAtAnAliasNameIsAConflictAndLeftAlone() throws IOException {
        installDriver(DEBIAN);
        Path d = root.resolve(DEBIAN);
        Files.createDirectory(d.resolve("libcuda.so.1"));
        Files.writeString(d.resolve("libnvidia-ml.so.1"), "the image's own old NVML");
        Processes.check(List.of("mkfifo", d.resolve("libnvidia-nvvm.so.4").toString()));
        boolean root = Processes.isRoot();
        if (root) {
            Processes.check(List.of("mknod", d.resolve("libGLX_nvidia.so.0").toString(), "c", "1", "3"));
        }
        Map<String, String> before = TreeSnapshot.of(d);

        Run run = repair();

        assertThat(run.exit()).isEqualTo(1);
        assertThat(run.out()).contains("conflict      /usr/lib/x86_64-linux-gnu/libcuda.so.1")
                .contains("a directory holds the alias name")
                .contains("a regular file holds the alias name")
                .contains("a special file holds the alias name");
        Map<String, String> after = TreeSnapshot.of(d);
        for (String name : List.of("libcuda.so.1", "libnvidia-ml.so.1", "libnvidia-nvvm.so.4")) {
            assertThat(after.get(name)).isEqualTo(before.get(name));
        }
        if (root) {
            assertThat(after.get("libGLX_nvidia.so.0")).isEqualTo(before.get("libGLX_nvidia.so.0"));
        }
        assertSentinelUntouched();
    }

    @Test
    void aFifoOrDeviceNamedLikeADriverLibraryIsNeverOpened() throws IOException {
        install(DEBIAN, "libcuda.so." + V);
        Processes.check(List.of("mkfifo", root.resolve(DEBIAN + "/libnvidia-ml.so." + V).toString()));
        if (Processes.isRoot()) {
            Processes.check(List.of("mknod", root.resolve(DEBIAN + "/libnvidia-nvvm.so." + V).toString(), "c", "1", "5"));
        }

        Run run = repair();

        assertThat(run.exit()).isEqualTo(1);
        assertThat(run.out()).contains("problem       /usr/lib/x86_64-linux-gnu/libnvidia-ml.so." + V)
                .contains("not a regular file");
        assertThat(link(DEBIAN + "/libcuda.so.1")).isEqualTo("libcuda.so." + V);
        assertSentinelUntouched();
    }

    @Test
    void symlinkLoopsAtTheDirectoryAndAtTheAlias() throws IOException {
        installDriver(DEBIAN);
        Files.createDirectories(root.resolve("usr"));
        Files.createSymbolicLink(root.resolve(RHEL), Path.of("lib64"));
        Files.createSymbolicLink(root.resolve(DEBIAN + "/libcuda.so.1"), Path.of("libcuda.so.1"));

        Run run = repair();

        assertThat(run.out()).contains("problem       /usr/lib64").contains("unsafe_path");
        assertThat(link(DEBIAN + "/libcuda.so.1")).isEqualTo("libcuda.so." + V);
        assertSentinelUntouched();
    }

    @Test
    void aHugeFileAndATruncatedElfNamedLikeDriverLibraries() throws IOException {
        install(DEBIAN, "libcuda.so." + V);
        try (RandomAccessFile huge = new RandomAccessFile(root.resolve(DEBIAN + "/libnvidia-ml.so." + V).toFile(), "rw")) {
            huge.setLength(100L << 20);
        }
        byte[] elf = Files.readAllBytes(compiled.resolve("libnvidia-nvvm.so." + V));
        Files.write(root.resolve(DEBIAN + "/libnvidia-nvvm.so." + V), java.util.Arrays.copyOf(elf, 200));

        long start = System.nanoTime();
        Run run = repair();
        long millis = (System.nanoTime() - start) / 1_000_000;

        assertThat(run.exit()).isEqualTo(1);
        assertThat(run.out()).contains("problem       /usr/lib/x86_64-linux-gnu/libnvidia-ml.so." + V)
                .contains("problem       /usr/lib/x86_64-linux-gnu/libnvidia-nvvm.so." + V)
                .contains("cannot read SONAME");
        assertThat(link(DEBIAN + "/libcuda.so.1")).isEqualTo("libcuda.so." + V);
        assertThat(millis).as("a 100 MiB file is not read whole").isLessThan(20_000);
        assertSentinelUntouched();
    }

    @Test
    void aHostDirectoryBindMountedAtTheLibraryDirectoryIsNotWritten() throws IOException {
        assumeTrue(Processes.isRoot(), "bind mounts need root; .ci/run runs the tests as root");
        Path target = Files.createDirectories(root.resolve(RHEL));
        Processes.check(List.of("mount", "--bind", sentinel.toString(), target.toString()));
        try {
            Run run = repair();

            assertThat(run.exit()).isEqualTo(1);
            assertThat(run.out()).contains("unsafe_path").contains("is a mount point");
        } finally {
            Processes.check(List.of("umount", target.toString()));
        }
        assertSentinelUntouched();
    }

    @Test
    void aReadOnlyRootIsReportedAsReadOnly() throws IOException {
        assumeTrue(Processes.isRoot(), "a read-only bind mount needs root; .ci/run runs the tests as root");
        installDriver(DEBIAN);
        Processes.check(List.of("mount", "--bind", root.toString(), root.toString()));
        try {
            Processes.check(List.of("mount", "-o", "remount,ro,bind", root.toString()));
            Run run = repair();

            assertThat(run.exit()).isEqualTo(1);
            assertThat(run.out()).contains("read_only");
            assertThat(Files.exists(root.resolve(DEBIAN + "/libcuda.so.1"), LinkOption.NOFOLLOW_LINKS)).isFalse();
        } finally {
            Processes.check(List.of("umount", root.toString()));
        }
    }

    @Test
    void aMissingRootIsAUsageError() {
        root = tmp.resolve("does-not-exist");

        Run run = repair();

        assertThat(run.exit()).isEqualTo(2);
        assertThat(run.err()).contains("cannot open root");
    }

    @Test
    void temporaryLinksOfAnInterruptedRepairAreRemovedAndNothingElse() throws IOException {
        installDriver(DEBIAN);
        Path d = root.resolve(DEBIAN);
        Files.createSymbolicLink(d.resolve(".libcuda.so.1.driver-alias-5eed0fdeadbeef"), Path.of("libcuda.so." + V));
        Files.createSymbolicLink(d.resolve(".driver-alias-12ab"), Path.of("nowhere"));
        Files.writeString(d.resolve(".libnvidia-ml.so.1.driver-alias-77"), "not a link: not ours");
        Files.createSymbolicLink(d.resolve(".libcuda.so.1.driver-alias-notHex"), Path.of("x"));

        Run run = repair();

        assertThat(run.exit()).as(run.out()).isZero();
        assertThat(d.resolve(".libcuda.so.1.driver-alias-5eed0fdeadbeef")).doesNotExist();
        assertThat(Files.exists(d.resolve(".driver-alias-12ab"), java.nio.file.LinkOption.NOFOLLOW_LINKS)).isFalse();
        assertThat(d.resolve(".libnvidia-ml.so.1.driver-alias-77")).hasContent("not a link: not ours");
        assertThat(Files.isSymbolicLink(d.resolve(".libcuda.so.1.driver-alias-notHex"))).isTrue();
    }

    @Test
    void aDryRunRemovesNoLeftover() throws IOException {
        installDriver(DEBIAN);
        Path leftover = root.resolve(DEBIAN).resolve(".libcuda.so.1.driver-alias-abc");
        Files.createSymbolicLink(leftover, Path.of("libcuda.so." + V));

        repair("--dry-run");

        assertThat(Files.isSymbolicLink(leftover)).isTrue();
    }
}
