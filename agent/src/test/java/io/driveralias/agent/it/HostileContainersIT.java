package io.driveralias.agent.it;

import static io.driveralias.agent.testing.TestImages.DEBIAN_LIB;
import static io.driveralias.agent.testing.TestImages.RHEL_LIB;
import static io.driveralias.agent.testing.TestImages.VERSION;
import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.Processes;
import io.driveralias.agent.testing.SharedEngines;
import io.driveralias.agent.testing.TestImages;
import io.driveralias.agent.testing.TreeSnapshot;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * The hostile cases of the threat model (docs/threat-model.md) that need a live container. One agent serves them all, in
 * turn; after each, a sentinel directory on the host must be exactly as it was, and a plain
 * GPU container started afterwards must still be repaired.
 */
@Timeout(600)
@ResourceLock(SharedEngines.DOCKER)
class HostileContainersIT {

    static DockerHarness docker;
    static Path sentinel;
    static Map<String, String> sentinelBefore;
    static AgentProcess agent;
    static GpuContainers containers;
    static String plainImage;

    @BeforeAll
    static void setUp() throws IOException {
        docker = DockerHarness.get();
        sentinel = Files.createTempDirectory("daa-sentinel-");
        // What a confused agent would love to write into: the host's own driver files (hard links,
        // the same files), without aliases.
        for (String file : TestImages.DRIVER.keySet()) {
            Files.createLink(sentinel.resolve(file), TestImages.driverDir().resolve(file));
        }
        Files.writeString(sentinel.resolve("victim"), "host data");
        sentinelBefore = TreeSnapshot.of(sentinel);
        plainImage = TestImages.image(docker, "debian-layout", DEBIAN_LIB, root -> { });
        containers = new GpuContainers(docker);
        agent = AgentProcess.start(docker, "--ldconfig", "cache");
        agent.awaitLog("first reconcile", Duration.ofSeconds(30));
    }

    @AfterAll
    static void tearDown() {
        containers.close();
        agent.close();
    }

    private static void assertHostUntouchedAndAgentServing() {
        assertThat(TreeSnapshot.of(sentinel)).as("host sentinel").isEqualTo(sentinelBefore);
        String plain = containers.start(plainImage, DEBIAN_LIB);
        containers.awaitNvidiaSmi(plain);
        assertThat(agent.isAlive()).isTrue();
    }

    @Test
    void libraryDirectorySwappedForASymlinkToAHostDirectory() {
        // The image's /usr/lib64 is an absolute symlink to the sentinel's host path. Inside the
        // container that path is the container's own; the agent must never reach the host's.
        String image = TestImages.image(docker, "lib64-to-host", RHEL_LIB, root -> {
            Files.delete(root.resolve("usr/lib64/ld-linux-x86-64.so.2"));
            Files.delete(root.resolve("usr/lib64"));
            Files.createSymbolicLink(root.resolve("usr/lib64"), sentinel);
            Files.createDirectories(root.resolve(sentinel.toString().substring(1)));
            Files.createSymbolicLink(root.resolve(sentinel.toString().substring(1)).resolve("ld-linux-x86-64.so.2"),
                    Path.of("/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"));
        });
        String id = containers.start(image, RHEL_LIB);

        containers.awaitLink(id, RHEL_LIB + "/libcuda.so.1", "libcuda.so." + VERSION);
        containers.awaitNvidiaSmi(id);
        assertHostUntouchedAndAgentServing();
    }

    @Test
    void aHostDirectoryBindMountedAtTheLibraryDirectoryIsNeverWritten() {
        // A GPU container (the driver's files declared) whose /usr/local/nvidia/lib64 is a host
        // directory holding the host's own driver files: the aliases would belong there, but it
        // is a mount point, and the host's.
        String id = containers.run(plainImage, DEBIAN_LIB, List.of("sleep", "600"),
                "-v", sentinel + ":/usr/local/nvidia/lib64");

        agent.awaitLog("container " + id.substring(0, 12) + " .* is not repaired: .*unsafe_path.*mount point",
                Duration.ofSeconds(20));
        assertHostUntouchedAndAgentServing();
    }

    @Test
    void aFifoNamedLikeADriverLibraryIsNeverOpened() {
        String image = TestImages.image(docker, "fifo-library", DEBIAN_LIB, root ->
                Processes.check(List.of("mkfifo", root.resolve("usr/lib/x86_64-linux-gnu/libnvidia-fifo.so." + VERSION)
                        .toString())));
        String id = containers.start(image, DEBIAN_LIB);

        // The real driver files are linked; the FIFO is not the host's driver file: never opened
        // (an open would hang on it), never linked, nothing to report.
        containers.awaitNvidiaSmi(id);
        agent.awaitLog("repaired container " + id.substring(0, 12), Duration.ofSeconds(20));
        assertThat(containers.readlink(id, DEBIAN_LIB + "/libnvidia-fifo.so.1")).isEmpty();
        assertThat(agent.logLines(id.substring(0, 12))).noneMatch(l -> l.contains("WARN"));
        assertHostUntouchedAndAgentServing();
    }

    @Test
    void preloadsInTheImageNeverRunOnTheHost() throws IOException {
        Path marker = Path.of("/tmp/daa-preload-marker-" + ProcessHandle.current().pid());
        Files.deleteIfExists(marker);
        String image = TestImages.image(docker, "preload", DEBIAN_LIB, root -> {
            TestImages.compileLibrary(root.resolve("usr/lib"), "evil.so", "evil.so", """
                    #include <stdio.h>
                    __attribute__((constructor)) static void evil(void) {
                        FILE *f = fopen("%s", "w");
                        if (f) { fputs("ran", f); fclose(f); }
                    }
                    """.formatted(marker));
            Files.writeString(root.resolve("etc/ld.so.preload"), "/usr/lib/evil.so\n");
        });
        String id = containers.start(image, DEBIAN_LIB, "-e", "LD_PRELOAD=/usr/lib/evil.so");

        containers.awaitNvidiaSmi(id);
        AgentProcess.awaitTrue("ld.so.cache refreshed", Duration.ofSeconds(20),
                () -> containers.exec(id, "sh", "-c", "ldconfig -p | grep -q libcuda.so.1").exitCode() == 0);
        assertThat(marker).as("code from the image ran on the host").doesNotExist();
        // In the container the preload does what the image asked: that is the image's business.
        assertThat(containers.exec(id, "cat", marker.toString()).output()).contains("ran");
        assertHostUntouchedAndAgentServing();
    }

    /**
     * The agent used to run {@code ldconfig} in the container as uid 0, looked up through the
     * container's PATH: a user-writable directory early in PATH (conda's bin, ~/.local/bin)
     * handed root to any container user. Now nothing from the container runs at all: a
     * planted ldconfig, in PATH and in place of the image's own, never runs, whatever the
     * container's user, and the loader cache is refreshed all the same.
     */
    @Test
    void aPlantedLdconfigNeverRunsAndTheCacheIsRefreshedWithoutIt() {
        String plant = "#!/bin/sh\nid -u > /home/user/ran-as-$(id -u)\n";
        String image = TestImages.image(docker, "planted-ldconfig", DEBIAN_LIB, root -> {
            Path home = Files.createDirectories(root.resolve("home/user/bin"));
            Files.writeString(home.resolve("ldconfig"), plant);
            Files.move(root.resolve("sbin/ldconfig"), Files.createDirectories(root.resolve("opt")).resolve("ldconfig.real"));
            Files.writeString(root.resolve("sbin/ldconfig"), plant);
            Processes.check(List.of("chmod", "0755", home.resolve("ldconfig").toString(),
                    root.resolve("sbin/ldconfig").toString()));
            Processes.check(List.of("chown", "-R", "1000:1000", root.resolve("home/user").toString()));
        });
        String path = "PATH=/home/user/bin:/usr/bin:/bin:/sbin";
        String asUser = containers.start(image, DEBIAN_LIB, "--user", "1000:1000", "-e", path);
        String asRoot = containers.start(image, DEBIAN_LIB, "-e", path);

        for (String id : List.of(asUser, asRoot)) {
            containers.awaitNvidiaSmi(id);
            AgentProcess.awaitTrue("ld.so.cache lists libcuda.so.1 in " + id, Duration.ofSeconds(20),
                    () -> containers.exec(id, "sh", "-c", "/opt/ldconfig.real -p | grep -q 'libcuda.so.1 '")
                            .exitCode() == 0);
            assertThat(containers.exec(id, "ls", "/home/user").output()).as("a planted ldconfig ran")
                    .doesNotContain("ran-as");
        }
        assertHostUntouchedAndAgentServing();
    }

    /**
     * A "driver file" whose SONAME is the loader's own name: the agent used to replace the
     * image's ld-linux-x86-64.so.2 link with one to it, and the container's next program died.
     * A file may only name an alias of its own library.
     */
    @Test
    void aDriverFileNamedLikeTheLoaderNeverReplacesTheImagesLoaderLink() {
        String image = TestImages.image(docker, "loader-soname", DEBIAN_LIB, root ->
                TestImages.compileLibrary(root.resolve("usr/lib64"), "libnvidia-evil.so." + VERSION,
                        "ld-linux-x86-64.so.2", "int evil(void) { return 1; }\n"));
        String id = containers.start(image, DEBIAN_LIB);

        containers.awaitNvidiaSmi(id);
        assertThat(containers.readlink(id, "/usr/lib64/ld-linux-x86-64.so.2"))
                .isEqualTo("../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2");
        assertThat(containers.exec(id, "sh", "-c", "nvidia-smi && echo still-runs").output()).contains("still-runs");
        assertHostUntouchedAndAgentServing();
    }

    /**
     * Pod labels are whoever created the container's text: a newline in one must not make a
     * second log line. Docker's labels count only on a container the kubelet named (its name,
     * which Docker keeps to [a-zA-Z0-9_.-], says the same pod): these are not read at all.
     */
    @Test
    void aPodLabelWithANewlineCannotForgeALogLine() {
        String forged = "2026-11-30T10:00:00.000Z INFO  [repair-0] i.d.a.live.ExaminationReporter - repaired container"
                + " 000000000000 (forged)";
        String id = containers.start(plainImage, DEBIAN_LIB,
                "--label", "io.kubernetes.pod.namespace=ml",
                "--label", "io.kubernetes.pod.name=train\n" + forged,
                "--label", "io.kubernetes.pod.uid=0b5c3a1e",
                "--label", "io.kubernetes.container.name=main");

        agent.awaitLog("repaired container " + id.substring(0, 12), Duration.ofSeconds(20));
        assertThat(agent.logLines("repaired container " + id.substring(0, 12))).singleElement().asString()
                .doesNotContain("train").doesNotContain("(forged)");
        assertThat(agent.log()).doesNotContain("(forged)");
    }
}
