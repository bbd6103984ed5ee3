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
    /**
     * Found in CI (ReliabilityIT): a container that exited at once lost its mounts before its
     * runtime reaped it, the look through its process saw the runtime's empty placeholders, and a
     * zombie still answers signal 0: "the image's own libcuda" was said of a container that had the
     * node's. A look whose process is on its way out when it ends says nothing.
     */
    @Test
    void aLookAtAProcessThatIsExitingSaysNothing() throws Exception {
        PathResolver resolver = PathResolver.detect(false);
        Path driver = DriverHosts.install(dir.resolve("node"), RealDriver.libraryDir(RealDriver.Arch.AMD64), "current");
        HostDriverFiles host = new HostDriverFiles(new HostRoot(dir.resolve("host-proc").toString(), resolver),
                List.of(driver.toString()), Optional.empty());
        DriverLooks looks = new DriverLooks(new ContainerRoots(dir.resolve("proc").toString(), resolver), host,
                () -> Optional.of(ContainerFixtures.VERSION));
        String id = ContainerFixtures.newId();
        int pid = 4242;
        Path process = java.nio.file.Files.createDirectories(dir.resolve("proc/" + pid));
        java.nio.file.Files.writeString(process.resolve("cgroup"), "12:cpu:/docker/" + id + "\n");
        java.nio.file.Files.writeString(process.resolve("mountinfo"), "");
        Path lib = java.nio.file.Files.createDirectories(dir.resolve("root" + ContainerFixtures.LIB));
        // What is left where the runtime's bind was: its empty placeholder.
        java.nio.file.Files.createFile(lib.resolve(ContainerFixtures.DRIVER_FILE));
        java.nio.file.Files.createSymbolicLink(process.resolve("root"), dir.resolve("root"));
        ContainerInfo info = ContainerInfo.builder(id).name("/x").image("img").running(true).pid(pid)
                .startedAt(Optional.of(Instant.EPOCH)).storage("overlay2").build();
        RepairReport report = new RepairReport(Optional.of(ContainerFixtures.VERSION), List.of(), List.of(),
                LoaderCache.Status.NOT_CHECKED, List.of(new DriverLibrary(ContainerFixtures.LIB,
                        ContainerFixtures.DRIVER_FILE, "libjsig.so")));

        java.nio.file.Files.writeString(process.resolve("stat"), pid + " (sh) S 1 1 1 0 -1 4194560 0");
        assertThat(looks.of(info, report, () -> { }).take()).as("a running process is looked at").isPresent();

        java.nio.file.Files.writeString(process.resolve("stat"), pid + " (sh) R 1 1 1 0 -1 4194564 0");
        assertThat(looks.of(info, report, () -> { }).take()).as("in do_exit").isEmpty();
        java.nio.file.Files.writeString(process.resolve("stat"), pid + " (sh) Z 1 1 1 0 -1 4227084 0");
        assertThat(looks.of(info, report, () -> { }).take()).as("a zombie").isEmpty();
    }
}
