package io.driveralias.agent.live;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.DriverLibrary;
import io.driveralias.agent.repair.LoaderCache;
import io.driveralias.agent.fs.HostRoot;
import io.driveralias.agent.fs.PathResolver;
import io.driveralias.agent.repair.HostDriverFiles;
import io.driveralias.agent.repair.RepairReport;
import io.driveralias.agent.testing.DriverHosts;
import io.driveralias.agent.testing.RealDriver;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DriverLooksTest {

    @TempDir
    Path dir;

    /**
     * A container whose process is not visible is opened through its overlay's merged directory,
     * where the runtime's bind-mounted driver files are empty placeholders: what its loader takes
     * cannot be seen there, and the node's injected driver must not be called an image's copy.
     */
    @Test
    void aContainerSeenOnlyThroughItsMergedDirectoryIsNotJudged() throws Exception {
        ContainerFixtures fixtures = new ContainerFixtures(dir);
        ContainerInfo info = fixtures.gpuContainer(ContainerFixtures.newId(), Instant.parse("2026-12-05T10:00:00Z"));
        PathResolver resolver = PathResolver.detect(false);
        Path driver = DriverHosts.install(dir.resolve("node"), RealDriver.libraryDir(RealDriver.Arch.AMD64), "current");
        HostDriverFiles host = new HostDriverFiles(new HostRoot(dir.resolve("host-proc").toString(), resolver),
                List.of(driver.toString()), Optional.empty());
        assertThat(host.foundCount()).as("the host's driver is found").isPositive();
        DriverLooks looks = new DriverLooks(new ContainerRoots(dir.resolve("host-proc").toString(), resolver), host,
                () -> Optional.of(ContainerFixtures.VERSION));

        // The repair found the runtime's bind of the node's file in the root, as it does in a running container.
        RepairReport report = new RepairReport(Optional.of(ContainerFixtures.VERSION), List.of(), List.of(),
                LoaderCache.Status.NOT_CHECKED, List.of(new DriverLibrary(ContainerFixtures.LIB, ContainerFixtures.DRIVER_FILE,
                        "libjsig.so")));

        Optional<?> load = looks.of(info, report, () -> { }).take();

        assertThat(load).isEmpty();
    }
}
