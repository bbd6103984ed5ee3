package io.driveralias.agent.repair;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.DriverHosts;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The kernel module's version as a host procfs shows it, read again at each question. */
class KernelModuleTest {

    @TempDir
    Path dir;

    @Test
    void theModulesOwnLineIsReadEachTimeSoAReloadShows() throws Exception {
        Path proc = DriverHosts.proc(dir, Optional.of("535.104.05"));
        KernelModule module = new KernelModule(proc.toString());
        assertThat(module.version()).contains("535.104.05");

        DriverHosts.loadModule(proc, Optional.of("535.183.01"));
        assertThat(module.version()).contains("535.183.01");

        DriverHosts.loadModule(proc, Optional.empty());
        assertThat(module.version()).as("no module loaded").isEmpty();
        assertThat(new KernelModule(dir.resolve("nowhere").toString()).version()).isEmpty();
    }

    @Test
    void aFileOverItsBoundOrWithoutAVersionSaysNone() throws Exception {
        Path proc = DriverHosts.proc(dir, Optional.of("535.104.05"));
        Files.writeString(proc.resolve("driver/nvidia/version"), "x".repeat(5000));
        assertThat(new KernelModule(proc + "/").version()).isEmpty();
        Files.writeString(proc.resolve("driver/nvidia/version"), "NVRM version: something else\n");
        assertThat(new KernelModule(proc.toString()).version()).isEmpty();
    }
}
