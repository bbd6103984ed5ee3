package io.driveralias.agent.it;

import static io.driveralias.agent.testing.TestImages.DEBIAN_LIB;
import static io.driveralias.agent.testing.TestImages.RHEL_LIB;
import static io.driveralias.agent.testing.TestImages.VERSION;
import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.SharedEngines;
import io.driveralias.agent.testing.TestImages;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * Repair before the first instruction: on {@code create}, the aliases are written into the
 * container's writable layer, following overlayfs' rules for the image's layers; with
 * {@code docker run}, through the container's overlay once Docker has mounted it, before runc
 * runs the container's process.
 */
@Timeout(300)
@ResourceLock(SharedEngines.DOCKER)
class BeforeStartIT {

    static DockerHarness docker;
    static GpuContainers containers;
    static AgentProcess agent;
    static String image;

    @BeforeAll
    static void setUp() {
        docker = DockerHarness.get();
        containers = new GpuContainers(docker);
        image = TestImages.image(docker, "debian-layout", DEBIAN_LIB, root -> { });
        agent = AgentProcess.start(docker, "--ldconfig", "off");
        agent.awaitLog("first reconcile", Duration.ofSeconds(30));
    }

    @AfterAll
    static void tearDown() {
        containers.close();
        agent.close();
    }

    /** docker create with the driver mounts; the command runs nvidia-smi as its very first step. */
    static String create(String image, String libDir, String firstCommand) {
        List<String> args = new ArrayList<>(List.of("create"));
        args.addAll(TestImages.driverMounts(libDir));
        args.addAll(List.of(image, "sh", "-c", firstCommand + "; sleep 600"));
        String id = docker.run(args.toArray(String[]::new));
        containers.adopt(id);
        return id;
    }

    static Path upperDir(String id) {
        return Path.of(docker.run("inspect", "-f", "{{.GraphDriver.Data.UpperDir}}", id));
    }

    static void awaitSeeded(String id, String path) {
        Path link = upperDir(id).resolve(path.substring(1));
        AgentProcess.awaitTrue("the alias in the upper layer of " + id, Duration.ofSeconds(20),
                () -> Files.isSymbolicLink(link));
    }

    @Test
    void aliasesExistAtTheFirstInstruction() {
        String id = create(image, DEBIAN_LIB, "nvidia-smi && readlink " + DEBIAN_LIB + "/libcuda.so.1");
        awaitSeeded(id, DEBIAN_LIB + "/libnvidia-ml.so.1");

        docker.run("start", id);

        AgentProcess.awaitTrue("the container's first output", Duration.ofSeconds(20),
                () -> docker.run("logs", id).contains("libcuda.so." + VERSION));
        assertThat(docker.run("logs", id)).contains("NVML initialised");
        agent.awaitLog("repaired container " + id.substring(0, 12) + " .*before start: 4 link", Duration.ofSeconds(20));
    }

    @Test
    void withDockerRunTooTheAliasesExistAtTheFirstInstruction() {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            List<String> args = new ArrayList<>(List.of("run", "-d"));
            args.addAll(TestImages.driverMounts(DEBIAN_LIB));
            args.addAll(List.of(image, "sh", "-c", "readlink " + DEBIAN_LIB + "/libnvidia-ml.so.1 || echo MISSING; "
                    + "nvidia-smi; sleep 600"));
            String id = docker.run(args.toArray(String[]::new));
            containers.adopt(id);
            ids.add(id);
        }
        for (String id : ids) {
            AgentProcess.awaitTrue("the first output of " + id, Duration.ofSeconds(20),
                    () -> docker.run("logs", id).contains("NVML") || docker.run("logs", id).contains("MISSING"));
            assertThat(docker.run("logs", id)).as(id + ": " + agent.logLines(id.substring(0, 12)))
                    .contains("libnvidia-ml.so." + VERSION).doesNotContain("MISSING");
            // The agent says "before start" only where it can prove it: with docker run on Docker 20.10
            // (no containerd link here) it cannot always, though the container found its aliases.
            agent.awaitLog("repaired container " + id.substring(0, 12) + " .*: 4 link", Duration.ofSeconds(20));
        }
    }

    @Test
    void aContainerWithoutAGpuRequestGetsNothingBeforeItsStart() throws Exception {
        String id = docker.run("run", "-d", image, "sh", "-c", "ls " + DEBIAN_LIB + "; sleep 600");
        containers.adopt(id);
        AgentProcess.awaitTrue("it runs", Duration.ofSeconds(20),
                () -> docker.run("inspect", "-f", "{{.State.Running}}", id).equals("true"));
        Thread.sleep(500);
        assertThat(Files.exists(upperDir(id).resolve(DEBIAN_LIB.substring(1)), LinkOption.NOFOLLOW_LINKS))
                .as("nothing written into its layer").isFalse();
    }

    @Test
    void createdDirectoriesCopyTheImagesOwnerAndMode() {
        String odd = TestImages.image(docker, "odd-owner", DEBIAN_LIB, root -> { });
        // The image's library directory belongs to 1234:1234 with mode 0751.
        String owned = docker.run("run", "-d", odd, "sh", "-c",
                "chown 1234:1234 " + DEBIAN_LIB + " && chmod 0751 " + DEBIAN_LIB);
        AgentProcess.awaitTrue("chown to finish", Duration.ofSeconds(20),
                () -> docker.run("inspect", "-f", "{{.State.Running}}", owned).equals("false"));
        docker.run("commit", owned, "daa-test/odd-owner:2");
        containers.adopt(owned);

        String id = create("daa-test/odd-owner:2", DEBIAN_LIB, "stat -c '%u:%g %a' " + DEBIAN_LIB);
        awaitSeeded(id, DEBIAN_LIB + "/libcuda.so.1");
        docker.run("start", id);

        AgentProcess.awaitTrue("the container's first output", Duration.ofSeconds(20),
                () -> !docker.run("logs", id).isBlank());
        assertThat(docker.run("logs", id).trim()).isEqualTo("1234:1234 751");
    }

    @Test
    void anOpaqueDirectoryHidesTheLowerLayersConflict() {
        // Lower layer: the image ships a regular file at the alias name (a conflict)...
        String base = TestImages.image(docker, "ships-own-cuda", DEBIAN_LIB, root ->
                Files.writeString(root.resolve("usr/lib/x86_64-linux-gnu/libcuda.so.1"), "old copy"));
        // ...and a later layer replaces the whole directory: overlayfs marks it opaque.
        String rebuilt = docker.run("run", "-d", base, "sh", "-c",
                "rm -rf " + DEBIAN_LIB + " && mkdir " + DEBIAN_LIB
                        + " && cp /lib64/ld-linux-x86-64.so.2 /tmp/ld && true");
        AgentProcess.awaitTrue("rebuild to finish", Duration.ofSeconds(20),
                () -> docker.run("inspect", "-f", "{{.State.Running}}", rebuilt).equals("false"));
        containers.adopt(rebuilt);
        docker.run("commit", rebuilt, "daa-test/opaque:2");

        String id = create("daa-test/opaque:2", DEBIAN_LIB, "true");

        awaitSeeded(id, DEBIAN_LIB + "/libcuda.so.1");
        assertThat(upperDir(id).resolve(DEBIAN_LIB.substring(1) + "/libcuda.so.1").toString()).satisfies(p ->
                assertThat(Files.isSymbolicLink(Path.of(p))).isTrue());
    }

    @Test
    void aSymlinkedLibraryDirectoryIsNotShadowedAndTheStartPathRepairs() throws Exception {
        // /lib64 is a symlink to usr/lib64 in the image: it must stay one.
        String id = create(image, "/lib64", "sleep 1");
        Thread.sleep(1500);
        Path upperLib64 = upperDir(id).resolve("lib64");
        assertThat(Files.exists(upperLib64, LinkOption.NOFOLLOW_LINKS)).as("nothing seeded over /lib64").isFalse();

        docker.run("start", id);

        containers.awaitLink(id, RHEL_LIB + "/libcuda.so.1", "libcuda.so." + VERSION);
        assertThat(containers.readlink(id, "/lib64")).isEqualTo("usr/lib64");
    }
}
