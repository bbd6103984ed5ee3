package io.driveralias.agent.it;

import static io.driveralias.agent.it.RealContainers.LIB_DIR;
import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.NativeLibraries;
import io.driveralias.agent.testing.Processes;
import io.driveralias.agent.testing.RealDriver;
import io.driveralias.agent.testing.RealDriver.Arch;
import io.driveralias.agent.testing.SharedEngines;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * Which driver a GPU container's programs load, as the running agent and {@code check} say it,
 * against what glibc's loader in the container really loads: Debian's real 535 driver injected at
 * its versioned names (as the NVIDIA runtime does), and images that carry the tesla-470 branch's
 * real libcuda as a stale copy or as old forward-compatibility libraries, or newer compat libraries
 * with NVIDIA's note, configured as NVIDIA's enable-cuda-compat hook does. The agent is given the
 * 535 driver's directory alone, so the node's driver is one version (no kernel module here).
 */
@Timeout(300)
@ResourceLock(SharedEngines.DOCKER)
class DriverMismatchIT {

    /** Prints the file the container's loader took for libcuda.so.1. */
    private static final String LOADED = "import ctypes; ctypes.CDLL('libcuda.so.1');"
            + " print([l.split()[-1] for l in open('/proc/self/maps') if 'libcuda' in l][0])";

    @TempDir
    static Path work;

    final DockerHarness docker = DockerHarness.get();
    final List<String> started = new ArrayList<>();
    String host;
    String legacy;
    String base;

    @BeforeEach
    void setUp() {
        host = RealDriver.version(Arch.AMD64);
        legacy = RealDriver.legacyVersion();
        base = RealDriver.debianImage(docker);
    }

    @AfterEach
    void remove() {
        docker.removeContainers(started);
    }

    /** {@code base} with {@code build} run in it and {@code ldconfig} after, committed as {@code tag} (once per engine). */
    private String image(String tag, Consumer<String> build) {
        String name = "daa-test/driver-mismatch-" + tag + ":1";
        if (docker.tryRun("image", "inspect", name).exitCode() != 0) {
            String id = docker.run("run", "-d", base, "sleep", "600");
            try {
                build.accept(id);
                docker.run("exec", id, "ldconfig");
                docker.run("commit", id, name);
            } finally {
                docker.removeContainers(List.of(id));
            }
        }
        return name;
    }

    private String imageWithStaleCopy() {
        return image("stale-copy", id -> {
            // An old driver's libcuda left in /usr/local/lib, which Debian's libc.conf lists before the
            // directory the runtime injects the node's driver into.
            docker.run("cp", RealDriver.legacyLibraryDir().resolve("libcuda.so." + legacy).toString(), id + ":/usr/local/lib/");
            docker.run("exec", id, "ln", "-s", "libcuda.so." + legacy, "/usr/local/lib/libcuda.so.1");
        });
    }

    /** A GPU container of {@code image}: the node's driver bind-mounted at its versioned names, as the NVIDIA runtime does. */
    private String gpuContainer(String image) {
        List<String> args = new ArrayList<>(List.of("run", "-d"));
        args.addAll(RealDriver.mounts(LIB_DIR));
        args.addAll(List.of(image, "sleep", "600"));
        String id = docker.run(args.toArray(String[]::new));
        started.add(id);
        return id;
    }

    private String loaded(String id) {
        Processes.Result r = docker.tryRun("exec", id, "python3", "-c", LOADED);
        assertThat(r.exitCode()).as(r.output()).isZero();
        return r.output().trim();
    }

    private String[] driverArgs() {
        return new String[] {"--host-lib-dir", RealDriver.libraryDir(Arch.AMD64).toString(), "--ldconfig", "cache",
            "--kubernetes", "off"};
    }

    private Processes.Result check(String id) {
        List<String> cmd = new ArrayList<>(List.of(AgentProcess.java(), "-jar", AgentProcess.jar().toString(), "check", id,
                "--docker-host", docker.host()));
        cmd.addAll(List.of(driverArgs()));
        return Processes.run(cmd);
    }

    private static String series(AgentProcess agent, String name, String id) {
        return agent.metrics().lines().filter(l -> l.startsWith(name + "{") && l.contains("container_id=\"" + id + "\""))
                .findFirst().orElse("");
    }

    @Test
    void anImagesStaleCopyIsSaidCountedAndFailsTheCheckAsTheRealLoaderLoadsIt() {
        String stale = imageWithStaleCopy();

        try (AgentProcess agent = AgentProcess.start(docker, driverArgs())) {
            agent.awaitLog("first reconcile", Duration.ofSeconds(30));
            String id = gpuContainer(stale);
            String plain = gpuContainer(base);

            agent.await("the mismatch series of " + id, Duration.ofSeconds(30),
                    () -> !series(agent, "driver_alias_container_driver_mismatch", id).isEmpty());
            // The agent's verdict is the real loader's: the image's 470 copy, though the node's 535 has its alias.
            assertThat(loaded(id)).isEqualTo("/usr/local/lib/libcuda.so." + legacy);
            assertThat(docker.run("exec", id, "readlink", LIB_DIR + "/libcuda.so.1")).isEqualTo("libcuda.so." + host);
            assertThat(series(agent, "driver_alias_container_driver_mismatch", id)).contains("loads=\"image\"",
                    "library=\"libcuda.so.1\"", "version=\"" + legacy + "\"").endsWith(" 1.0");
            assertThat(agent.logLines("WARN")).anyMatch(l -> l.contains("GPU container " + id.substring(0, 12))
                    && l.contains("the image's own libcuda.so.1 (" + legacy + ") is loaded instead of the node's driver " + host
                    + " (/usr/local/lib/libcuda.so." + legacy + ", through its /etc/ld.so.cache)"));

            agent.await("the plain container looked at", Duration.ofSeconds(30),
                    () -> agent.metric("driver_alias_container_driver_total{loads=\"node\"}") >= 1);
            assertThat(loaded(plain)).isEqualTo(LIB_DIR + "/libcuda.so." + host);
            assertThat(series(agent, "driver_alias_container_driver_mismatch", plain)).isEmpty();
            assertThat(agent.metric("driver_alias_container_driver_total{loads=\"image\"}")).isEqualTo(1);

            Processes.Result check = check(id);
            assertThat(check.exitCode()).as(check.output()).isEqualTo(1);
            assertThat(check.output()).contains("driver: image: the image's own libcuda.so.1 (" + legacy + ")")
                    .contains("libcuda.so.1 -> /usr/local/lib/libcuda.so." + legacy + ": the image's own copy (" + legacy + ")")
                    .contains("1 GPU container(s) will load a driver library that does not match");
            Processes.Result fine = check(plain);
            assertThat(fine.exitCode()).as(fine.output()).isZero();
            assertThat(fine.output()).contains("driver: node: the node's driver " + host);

            docker.run("rm", "-f", id);
            agent.await("the mismatch series gone with its container", Duration.ofSeconds(30),
                    () -> series(agent, "driver_alias_container_driver_mismatch", id).isEmpty());
        }
    }

    @Test
    void compatLibrariesOlderThanTheNodesDriverAreAMismatch() {
        String old = image("compat-older", id -> {
            // cuda-compat of CUDA 11.4 (the 470 branch's libcuda), configured by the image itself.
            docker.run("exec", id, "mkdir", "-p", "/usr/local/cuda-11.4/compat");
            docker.run("cp", RealDriver.legacyLibraryDir().resolve("libcuda.so." + legacy).toString(),
                    id + ":/usr/local/cuda-11.4/compat/");
            docker.run("exec", id, "ln", "-s", "libcuda.so." + legacy, "/usr/local/cuda-11.4/compat/libcuda.so.1");
            docker.run("exec", id, "sh", "-c", "echo /usr/local/cuda-11.4/compat > /etc/ld.so.conf.d/000_cuda-compat.conf");
        });

        try (AgentProcess agent = AgentProcess.start(docker, driverArgs())) {
            agent.awaitLog("first reconcile", Duration.ofSeconds(30));
            String id = gpuContainer(old);

            agent.await("the mismatch series of " + id, Duration.ofSeconds(30),
                    () -> !series(agent, "driver_alias_container_driver_mismatch", id).isEmpty());
            assertThat(loaded(id)).isEqualTo("/usr/local/cuda-11.4/compat/libcuda.so." + legacy);
            assertThat(series(agent, "driver_alias_container_driver_mismatch", id)).contains("loads=\"compat_older\"");
            Processes.Result check = check(id);
            assertThat(check.exitCode()).as(check.output()).isEqualTo(1);
            assertThat(check.output()).contains("driver: compat_older: the image's CUDA forward-compatibility libcuda.so.1 ("
                    + legacy + ") is older than the node's driver " + host);
        }
    }

    /** NVIDIA's hook's 00-compat ordering keeps the newer compat libraries first with the agent on. */
    @Test
    void forwardCompatibilityKeepsWorkingWithTheAgentOn() throws Exception {
        Path compat = NativeLibraries.compileCompat(Files.createDirectories(work.resolve("compat")), "575.57.08", "12.9",
                List.of(535, 550, 560, 565, 570, 575));
        String image = image("compat-hook", id -> {
            docker.run("exec", id, "mkdir", "-p", "/usr/local/cuda-12.9/compat");
            docker.run("cp", compat.toString(), id + ":/usr/local/cuda-12.9/compat/");
            docker.run("exec", id, "ln", "-s", "libcuda.so.575.57.08", "/usr/local/cuda-12.9/compat/libcuda.so.1");
            docker.run("exec", id, "sh", "-c", "echo /usr/local/cuda-12.9/compat"
                    + " > /etc/ld.so.conf.d/00-compat-2f1e5a4c-9d3b-4e7a-8c61-0b5f3e9d2a17.conf");
        });

        try (AgentProcess agent = AgentProcess.start(docker, driverArgs())) {
            agent.awaitLog("first reconcile", Duration.ofSeconds(30));
            String id = gpuContainer(image);

            agent.await("the compat container looked at", Duration.ofSeconds(30),
                    () -> agent.metric("driver_alias_container_driver_total{loads=\"compat\"}") >= 1);
            // The agent made its aliases and refreshed the cache; the loader still takes the compat libraries first.
            assertThat(docker.run("exec", id, "readlink", LIB_DIR + "/libcuda.so.1")).isEqualTo("libcuda.so." + host);
            assertThat(loaded(id)).isEqualTo("/usr/local/cuda-12.9/compat/libcuda.so.575.57.08");
            assertThat(series(agent, "driver_alias_container_driver_mismatch", id)).isEmpty();
            assertThat(agent.logLines("INFO")).anyMatch(l -> l.contains("CUDA forward compatibility: the image's libcuda.so.1"
                    + " (575.57.08, CUDA 12.9, enabled by NVIDIA's hook) is loaded over the node's driver " + host));
            Processes.Result check = check(id);
            assertThat(check.exitCode()).as(check.output()).isZero();
        }
    }
}
