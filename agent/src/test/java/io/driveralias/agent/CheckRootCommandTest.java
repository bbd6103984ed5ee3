package io.driveralias.agent;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.driveralias.agent.testing.NativeLibraries;
import io.driveralias.agent.testing.TreeSnapshot;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code check --root DIR}: the report of {@code repair --root --dry-run} in {@code check}'s words
 * (missing, ok, conflict), {@code check}'s exit codes, and nothing written, whatever the root holds.
 */
@Timeout(60)
class CheckRootCommandTest {

    private static final String V = "535.104.05";
    private static final String DEBIAN = "usr/lib/x86_64-linux-gnu";

    @TempDir
    static Path compiled;

    @TempDir
    Path tmp;

    Path root;

    @BeforeAll
    static void compileDriver() {
        NativeLibraries.compile(compiled, "libcuda.so." + V, "libcuda.so.1");
        NativeLibraries.compile(compiled, "libnvidia-ml.so." + V, "libnvidia-ml.so.1");
    }

    @BeforeEach
    void makeRoot() {
        root = tmp.resolve("root");
        for (String file : List.of("libcuda.so." + V, "libnvidia-ml.so." + V)) {
            NativeLibraries.copy(compiled.resolve(file), root.resolve(DEBIAN), file);
        }
    }

    private record Run(int exit, String out, String err) {
    }

    private static Run run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = Main.run(new ArrayList<>(List.of(args)), Map.of(), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void reportsMissingAliasesExitsOneAndChangesNothing() {
        Map<String, String> before = TreeSnapshot.of(root);

        Run check = run("check", "--root", root.toString());

        assertThat(check.exit()).as(check.out() + check.err()).isEqualTo(1);
        assertThat(check.out()).contains("missing       /usr/lib/x86_64-linux-gnu/libcuda.so.1 -> libcuda.so." + V)
                .contains("driver " + V + ": 0 created, 0 replaced, 0 ok, 2 missing").doesNotContain("would create");
        assertThat(TreeSnapshot.of(root)).isEqualTo(before);
    }

    @Test
    void aRepairedRootChecksHealthy() {
        assertThat(run("repair", "--root", root.toString()).exit()).isZero();

        Run check = run("check", "--root", root.toString());

        assertThat(check.exit()).as(check.out()).isZero();
        assertThat(check.out()).contains("ok            /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 -> libnvidia-ml.so." + V)
                .contains("0 created, 0 replaced, 2 ok, 0 missing");
    }

    @Test
    void jsonForMachines() throws IOException {
        Run check = run("check", "--root", root.toString(), "--json");

        JsonNode json = new ObjectMapper().readTree(check.out());
        assertThat(json.get("root").asText()).isEqualTo(root.toString());
        assertThat(json.get("healthy").asBoolean()).isFalse();
        assertThat(json.get("links")).allSatisfy(l -> assertThat(l.get("status").asText()).isEqualTo("planned"));
        assertThat(check.exit()).isEqualTo(1);
    }

    /** A hostile root: a file squatting an alias name is a conflict, left as it is. */
    @Test
    void aSquattedAliasIsReportedAndLeftAlone() throws IOException {
        Files.writeString(root.resolve(DEBIAN + "/libcuda.so.1"), "squatter");
        Map<String, String> before = TreeSnapshot.of(tmp);

        Run check = run("check", "--root", root.toString());

        assertThat(check.exit()).isEqualTo(1);
        assertThat(check.out()).contains("conflict      /usr/lib/x86_64-linux-gnu/libcuda.so.1");
        assertThat(TreeSnapshot.of(tmp)).isEqualTo(before);
    }

    @Test
    void aRootThatCannotBeOpenedIsAUsageError() {
        Run check = run("check", "--root", tmp.resolve("nowhere").toString());

        assertThat(check.exit()).isEqualTo(2);
        assertThat(check.err()).contains("cannot open root");
    }
}
