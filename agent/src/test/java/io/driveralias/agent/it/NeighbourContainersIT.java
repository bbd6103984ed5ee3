package io.driveralias.agent.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.RealDriver;
import io.driveralias.agent.testing.RealDriver.Arch;
import io.driveralias.agent.testing.TestImages;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * What one container can do to the agent's work on its neighbours: nothing. Each attack of
 * the security review is made here as it was found, against a private dockerd whose test GPU
 * runtime adds NVIDIA's real files the way the NVIDIA runtime does ({@link GpuRuntimeDocker}),
 * with NVIDIA's real user-space and a real Debian image:
 * <ul>
 * <li>a container without a GPU request declares binds of {@code libz.so.<driver version>},
 *     {@code libstdc++.so.<driver version>} and {@code libcudnn.so.<driver version>} from a
 *     volume laid out like a library directory, and another binds only the host's real libcuda
 *     under plain runc: the GPU containers started after them still get exactly the driver's aliases
 *     before their first instruction, and their own {@code libz.so.1} and {@code libstdc++.so.6}
 *     links stand;</li>
 * <li>containers without a GPU request, whose image ships a file named like the driver's, are
 *     never written, at start or before;</li>
 * <li>a GPU container with {@code CAP_SYS_ADMIN} that mounts files of its own at driver names
 *     teaches the agent nothing either.</li>
 * </ul>
 */
@Timeout(900)
class NeighbourContainersIT {

    @TempDir
    static Path tmp;
    static DockerHarness docker;
    static AgentProcess agent;
    static RealContainers containers;
    static String version;
    static final String LIB = RealContainers.LIB_DIR;

    @BeforeAll
    static void setUp() {
        docker = GpuRuntimeDocker.start(tmp);
        containers = new RealContainers(docker);
        version = RealDriver.version(Arch.AMD64);
        agent = AgentProcess.start(docker, "--ldconfig", "cache", "--gpu-runtime", "gpu");
        agent.awaitLog("first reconcile", Duration.ofSeconds(60));
        // A GPU container shows the agent which files the runtime adds.
        String first = containers.startWithoutMounts("--runtime", "gpu", "--env", "NVIDIA_VISIBLE_DEVICES=all");
        containers.awaitWorking(first);
    }

    @AfterAll
    static void tearDown() {
        if (containers != null) {
            containers.close();
        }
        if (agent != null) {
            agent.close();
        }
        if (docker != null) {
            docker.close();
        }
    }

    /** How many containers the agent has counted with this outcome. */
    private static double counted(String outcome) {
        return agent.metric("driver_alias_containers_total{outcome=\"" + outcome + "\"}");
    }

    private static void awaitCounted(String outcome, double atLeast) {
        agent.await(atLeast + " containers counted " + outcome, Duration.ofSeconds(60), () -> counted(outcome) >= atLeast);
    }

    private static String link(String id, String name) {
        return containers.exec(id, "readlink", LIB + "/" + name).output().trim();
    }

    @Test
    void aNeighbourWithoutAGpuRequestCannotChangeWhatOthersGet() {
        Path volume = tmp.resolve("volumes/v/_data/usr/lib/x86_64-linux-gnu");
        List<String> binds = new ArrayList<>();
        for (String[] lib : List.of(new String[] {"libz", "libz.so.1"}, new String[] {"libstdc++", "libstdc++.so.6"},
                new String[] {"libcudnn", "libcudnn.so.8"})) {
            String file = lib[0] + ".so." + version;
            TestImages.compileLibrary(volume, file, lib[1], "int hostile_" + lib[0].replace("+", "p") + "(void) { return 1; }\n");
            binds.addAll(List.of("-v", volume.resolve(file) + ":" + LIB + "/" + file + ":ro"));
        }
        double noDriverBefore = counted("no_driver");
        containers.startWithoutMounts(binds.toArray(String[]::new));
        awaitCounted("no_driver", noDriverBefore + 1);
        // A container that binds the host's libcuda under plain runc (as CDSW binds the driver's
        // files): its own request, repaired, and what it declared is not what the runtime adds.
        Path hostCuda = RealDriver.libraryDir(Arch.AMD64).resolve("libcuda.so." + version);
        String declared = containers.startWithoutMounts("-v", hostCuda + ":" + LIB + "/libcuda.so." + version + ":ro");
        containers.awaitLink(declared, "libcuda.so.1");
        // A GPU container may declare such binds too: its files are not the driver's, and not the runtime's.
        List<String> gpuWithBinds = new ArrayList<>(List.of("--runtime", "gpu", "--env", "NVIDIA_VISIBLE_DEVICES=all"));
        gpuWithBinds.addAll(binds);
        String hostileGpu = containers.startWithoutMounts(gpuWithBinds.toArray(String[]::new));
        containers.awaitWorking(hostileGpu);
        assertThat(link(hostileGpu, "libz.so.1")).isEqualTo("libz.so.1.2.13");

        List<String> later = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            later.add(containers.startProbing("run", "--runtime", "gpu", "--env", "NVIDIA_VISIBLE_DEVICES=all"));
        }
        for (String id : later) {
            String first = containers.firstInstructions(id);
            assertThat(first).as("the driver at the first instruction of " + id).contains("cache=yes")
                    .doesNotContain("nvidia-smi=" + RealContainers.NVML_NOT_FOUND).contains("cuInit 100");
            containers.awaitWorking(id);
            assertThat(link(id, "libz.so.1")).as("the image's own link").isEqualTo("libz.so.1.2.13");
            assertThat(link(id, "libstdc++.so.6")).isEqualTo("libstdc++.so.6.0.30");
            assertThat(containers.exec(id, "ls", LIB).output()).doesNotContain("libcudnn");
            assertThat(containers.exec(id, "python3", "-c", "import zlib; print(zlib.crc32(b'x'))").output().trim())
                    .as("the image's zlib still loads").isEqualTo("2363233923");
        }
        assertThat(containers.exec(declared, "ls", LIB).output()).as("only what it declared")
                .doesNotContain("libnvidia-ml.so.1");
        assertThat(agent.isAlive()).isTrue();
    }

    @Test
    void containersWithoutAGpuRequestAreNeverWrittenWhateverTheirImageHolds() {
        // An image that ships a file named like the driver's (a copy of the real one).
        double beforeBuilder = counted("no_driver");
        String builder = containers.startWithoutMounts();
        awaitCounted("no_driver", beforeBuilder + 1);
        docker.run("cp", RealDriver.libraryDir(Arch.AMD64).resolve("libcuda.so." + version).toString(),
                builder + ":" + LIB + "/libcuda.so." + version);
        String image = "daa-test/ships-libcuda:" + ProcessHandle.current().pid();
        docker.run("commit", builder, image);
        String cacheBefore = containers.exec(builder, "md5sum", "/etc/ld.so.cache").output();

        double before = counted("no_driver");
        List<String> ids = new ArrayList<>();
        for (List<String> options : List.of(List.of("--runtime", "gpu"), List.of("--runtime", "gpu", "--env",
                "NVIDIA_VISIBLE_DEVICES=void"), List.of("--runtime", "gpu", "--env", "NVIDIA_VISIBLE_DEVICES="),
                List.of("--runtime", "runc", "--env", "NVIDIA_VISIBLE_DEVICES=all"))) {
            List<String> args = new ArrayList<>(List.of("run", "-d"));
            args.addAll(options);
            args.addAll(List.of(image, "sleep", "600"));
            String id = docker.run(args.toArray(String[]::new));
            containers.adopt(id);
            ids.add(id);
        }
        awaitCounted("no_driver", before + ids.size());
        for (String id : ids) {
            assertThat(link(id, "libcuda.so.1")).as("no alias in " + id).isEmpty();
            assertThat(containers.exec(id, "md5sum", "/etc/ld.so.cache").output()).as("cache untouched in " + id)
                    .isEqualTo(cacheBefore);
        }
        docker.tryRun("rmi", "-f", image);
    }

    @Test
    void aGpuContainerMountingFilesOfItsOwnAtDriverNamesTeachesNothing() {
        // Its own tmpfs, its own files at driver names, bound over its library directory.
        String script = "mkdir -p /x && mount -t tmpfs t /x && for l in libz libcudnn; do"
                + " cp " + LIB + "/libz.so.1.2.13 /x/$l.so." + version + " && touch " + LIB + "/$l.so." + version
                + " && mount --bind /x/$l.so." + version + " " + LIB + "/$l.so." + version + "; done;"
                + " touch /ready; sleep 600";
        String hostile = docker.run("run", "-d", "--runtime", "gpu", "--env", "NVIDIA_VISIBLE_DEVICES=all",
                "--cap-add", "SYS_ADMIN", containers.image(), "sh", "-c", script);
        containers.adopt(hostile);
        AgentProcess.awaitTrue("its mounts", Duration.ofSeconds(30),
                () -> containers.exec(hostile, "test", "-e", "/ready").exitCode() == 0);
        // A new agent looks at it with those mounts in place (its first reconcile reads the mount table).
        agent.close();
        agent = AgentProcess.start(docker, "--ldconfig", "cache", "--gpu-runtime", "gpu");
        agent.awaitLog("first reconcile", Duration.ofSeconds(60));
        containers.awaitWorking(hostile);
        assertThat(link(hostile, "libz.so.1")).isEqualTo("libz.so.1.2.13");

        String next = containers.startProbing("run", "--runtime", "gpu", "--env", "NVIDIA_VISIBLE_DEVICES=all");
        containers.awaitWorking(next);
        assertThat(link(next, "libz.so.1")).isEqualTo("libz.so.1.2.13");
        assertThat(containers.exec(next, "ls", LIB).output()).doesNotContain("libcudnn");
    }
}
