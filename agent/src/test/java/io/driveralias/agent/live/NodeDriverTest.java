package io.driveralias.agent.live;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.core.HostDriverState;
import io.driveralias.agent.fs.HostRoot;
import io.driveralias.agent.fs.PathResolver;
import io.driveralias.agent.metrics.MicrometerRepairMetrics;
import io.driveralias.agent.metrics.ScrapedText;
import io.driveralias.agent.repair.HostDriverFiles;
import io.driveralias.agent.repair.KernelModule;
import io.driveralias.agent.testing.DriverHosts;
import io.driveralias.agent.testing.RealDriver;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The node's driver on hosts made of real drivers' user space (Debian bookworm's 535 and its
 * tesla-470 branch): the kernel module against the host's files, as the metric and the state say.
 */
class NodeDriverTest {

    @TempDir
    Path dir;

    private final MicrometerRepairMetrics metrics = new MicrometerRepairMetrics(
            new PrometheusMeterRegistry(PrometheusConfig.DEFAULT), "1.2.3");
    private final AtomicLong now = new AtomicLong(1_000_000_000_000L);

    @AfterEach
    void close() {
        metrics.close();
    }

    private NodeDriver node(Path proc) {
        KernelModule module = new KernelModule(proc.toString());
        HostDriverFiles files = new HostDriverFiles(new HostRoot(proc.toString(), PathResolver.detect(false)),
                List.of(DriverHosts.LIB_DIR), Optional.empty(), module::version, now::get, v -> { });
        return new NodeDriver(module::version, files, metrics);
    }

    private Map<String, String> series() {
        List<ScrapedText.Sample> samples = ScrapedText.parse(new String(metrics.scrape(null).body(), StandardCharsets.UTF_8))
                .samples("driver_alias_host_driver_state");
        assertThat(samples).as("one series at a time").hasSize(1);
        assertThat(samples.getFirst().value()).isEqualTo(1);
        return samples.getFirst().labels();
    }

    @Test
    void theRealDriversFilesUnderAnotherBranchesModuleAreAMismatchWithBothVersions() {
        String current = RealDriver.version(RealDriver.Arch.AMD64);
        String legacy = RealDriver.legacyVersion();
        Path proc = DriverHosts.proc(dir, Optional.of(legacy));
        DriverHosts.install(dir.resolve("root"), RealDriver.libraryDir(RealDriver.Arch.AMD64), "current");
        NodeDriver node = node(proc);

        HostDriverState state = node.look();

        assertThat(state).isEqualTo(new HostDriverState(HostDriverState.State.MISMATCH, Optional.of(legacy),
                Optional.of(current)));
        assertThat(series()).containsEntry("state", "mismatch").containsEntry("module_version", legacy)
                .containsEntry("library_version", current);
    }

    @Test
    void theModuleReloadedAfterTheUpgradeEndsTheMismatchAndReplacesTheSeries() throws Exception {
        String legacy = RealDriver.legacyVersion();
        Path proc = DriverHosts.proc(dir, Optional.of(legacy));
        Path installed = DriverHosts.install(dir.resolve("root"), RealDriver.legacyLibraryDir(), RealDriver.LEGACY_BRANCH);
        NodeDriver node = node(proc);
        assertThat(node.look().state()).isEqualTo(HostDriverState.State.MATCH);
        assertThat(series()).containsEntry("state", "match").containsEntry("library_version", legacy);

        // The packages upgraded: the 470 files replaced by 535's, the module still 470.
        try (var files = java.nio.file.Files.list(installed)) {
            for (Path f : files.toList()) {
                java.nio.file.Files.delete(f);
            }
        }
        DriverHosts.install(dir.resolve("root"), RealDriver.libraryDir(RealDriver.Arch.AMD64), "current");
        now.addAndGet(30_000_000_000L);
        assertThat(node.look().state()).isEqualTo(HostDriverState.State.MISMATCH);
        assertThat(series()).containsEntry("state", "mismatch");

        DriverHosts.loadModule(proc, Optional.of(RealDriver.version(RealDriver.Arch.AMD64)));
        assertThat(node.look().state()).isEqualTo(HostDriverState.State.MATCH);
        assertThat(series()).containsEntry("state", "match")
                .containsEntry("module_version", RealDriver.version(RealDriver.Arch.AMD64));
    }

    @Test
    void aDriverStillBeingInstalledIsNoModuleNotAMismatch() {
        Path proc = DriverHosts.proc(dir, Optional.empty());
        DriverHosts.install(dir.resolve("root"), RealDriver.libraryDir(RealDriver.Arch.AMD64), "current");

        assertThat(node(proc).state().state()).isEqualTo(HostDriverState.State.NO_MODULE);
        assertThat(series()).containsEntry("state", "no_module").containsEntry("module_version", "");
    }
}
