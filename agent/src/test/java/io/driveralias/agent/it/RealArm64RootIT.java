package io.driveralias.agent.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.Processes;
import io.driveralias.agent.testing.RealDriver;
import io.driveralias.agent.testing.RealDriver.Arch;
import io.driveralias.agent.testing.TreeSnapshot;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * NVIDIA's real arm64 driver files (EM_AARCH64 ELF, as on Grace Hopper and Jetson-class
 * hosts) unpacked at their versioned names into {@code /usr/lib/aarch64-linux-gnu} of an image
 * tree and repaired offline by the packaged agent's {@code repair --root}, on this amd64 machine:
 * the SONAMEs come from the ELF reader, nothing is executed.
 */
@Timeout(120)
class RealArm64RootIT {

    private static final int EM_AARCH64 = 183;

    @TempDir
    Path tmp;

    @Test
    void realArm64DriverIsRepairedOfflineAndASecondRunChangesNothing() throws IOException {
        String version = RealDriver.version(Arch.ARM64);
        Path root = tmp.resolve("root");
        Path lib = Files.createDirectories(root.resolve("usr/lib/aarch64-linux-gnu"));
        List<Path> files = RealDriver.versionedLibraries(Arch.ARM64);
        assertThat(files).hasSizeGreaterThanOrEqualTo(9);
        for (Path file : files) {
            assertThat(machine(file)).as(file + " e_machine").isEqualTo(EM_AARCH64);
            Files.copy(file, lib.resolve(file.getFileName()));
        }

        Processes.Result first = repair(root);

        assertThat(first.exitCode()).as(first.output()).isZero();
        Map<String, String> expected = Map.of(
                "libcuda.so.1", "libcuda.so." + version,
                "libnvidia-ml.so.1", "libnvidia-ml.so." + version,
                "libnvidia-nvvm.so.4", "libnvidia-nvvm.so." + version,
                "libnvidia-ptxjitcompiler.so.1", "libnvidia-ptxjitcompiler.so." + version,
                "libnvidia-allocator.so.1", "libnvidia-allocator.so." + version,
                "libnvidia-cfg.so.1", "libnvidia-cfg.so." + version,
                "libnvidia-encode.so.1", "libnvidia-encode.so." + version,
                "libnvcuvid.so.1", "libnvcuvid.so." + version,
                "libcudadebugger.so.1", "libcudadebugger.so." + version);
        for (Map.Entry<String, String> link : expected.entrySet()) {
            assertThat(Files.readSymbolicLink(lib.resolve(link.getKey())).toString()).as(link.getKey())
                    .isEqualTo(link.getValue());
        }
        assertThat(first.output()).contains("created       /usr/lib/aarch64-linux-gnu/libcuda.so.1 -> libcuda.so." + version)
                .contains("driver " + version + ": " + expected.size() + " created, 0 replaced");

        Map<String, String> after = TreeSnapshot.of(root);
        Processes.Result second = repair(root);
        assertThat(second.exitCode()).as(second.output()).isZero();
        assertThat(second.output()).contains("0 created, 0 replaced, " + expected.size() + " ok");
        assertThat(TreeSnapshot.of(root)).isEqualTo(after);
    }

    private static Processes.Result repair(Path root) {
        return Processes.run(List.of(AgentProcess.java(), "-jar",
                AgentProcess.jar().toString(), "repair", "--root", root.toString()), 60);
    }

    /** e_machine of an ELF file, read here independently of the agent's reader. */
    private static int machine(Path file) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "r")) {
            byte[] header = new byte[20];
            f.readFully(header);
            assertThat(new String(header, 1, 3, java.nio.charset.StandardCharsets.US_ASCII)).isEqualTo("ELF");
            return (header[18] & 0xff) | (header[19] & 0xff) << 8;
        }
    }
}
