package io.driveralias.agent.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.Processes;
import io.driveralias.agent.testing.RealDriver;
import io.driveralias.agent.testing.RealDriver.Arch;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Containers of the debootstrapped Debian image with NVIDIA's real driver files mounted at
 * their versioned names ({@link RealDriver}), and the checks a user would make in them.
 */
final class RealContainers implements AutoCloseable {

    /** nvidia-smi's exit code when it cannot dlopen libnvidia-ml.so.1. */
    static final int NVML_NOT_FOUND = 12;
    static final String LIB_DIR = Arch.AMD64.libDir();
    static final String CU_INIT = "import ctypes; print('cuInit', ctypes.CDLL('libcuda.so.1').cuInit(0))";
    /**
     * A container's command whose first instructions look for the driver and load it, as
     * {@link #startProbing} describes; it prints "end" when through, then sleeps.
     */
    static final List<String> FIRST_INSTRUCTIONS = List.of("sh", "-c", "if ldconfig -p | grep -q 'libcuda.so.1 '; then"
            + " echo cache=yes; else echo cache=no; fi; nvidia-smi >/dev/null 2>&1; echo nvidia-smi=$?;"
            + " python3 -c \"$0\" 2>&1; echo end; sleep 600", CU_INIT);

    private final DockerHarness docker;
    private final String image;
    private final List<String> started = Collections.synchronizedList(new ArrayList<>());

    RealContainers(DockerHarness docker) {
        this.docker = docker;
        this.image = RealDriver.debianImage(docker);
    }

    String image() {
        return image;
    }

    /** docker run -d [options] image sleep 600, with the driver files bind-mounted. */
    String start(String... options) {
        return create("run", true, options);
    }

    /** docker create (not started), with the driver files bind-mounted. */
    String create(String... options) {
        return create("create", true, options);
    }

    /** docker run -d without any driver mounts (a runtime or nothing adds them). */
    String startWithoutMounts(String... options) {
        return create("run", false, options);
    }

    private String create(String verb, boolean mounts, String... options) {
        List<String> args = new ArrayList<>(List.of(verb));
        if (verb.equals("run")) {
            args.add("-d");
        }
        if (mounts) {
            args.addAll(RealDriver.mounts(LIB_DIR));
        }
        args.addAll(List.of(options));
        args.addAll(List.of(image, "sleep", "600"));
        String id = docker.run(args.toArray(String[]::new));
        started.add(id);
        return id;
    }

    /**
     * docker run -d (or create) [options] image, whose first instructions look for the driver
     * and load it: {@code ldconfig -p | grep libcuda.so.1}, as NVIDIA's CUDA images decide at
     * their entrypoint whether the driver is there ("cache=yes"), then nvidia-smi (its exit
     * status), then cuInit through libcuda.so.1. What they printed is {@link #firstInstructions}.
     */
    String startProbing(String verb, String... options) {
        List<String> args = new ArrayList<>(List.of(verb));
        if (verb.equals("run")) {
            args.add("-d");
        }
        args.addAll(List.of(options));
        args.add(image);
        args.addAll(FIRST_INSTRUCTIONS);
        String id = docker.run(args.toArray(String[]::new));
        started.add(id);
        return id;
    }

    /** What a probing container's first instructions printed, once they are through. */
    String firstInstructions(String id) {
        AgentProcess.awaitTrue("the first instructions of " + id, Duration.ofSeconds(30),
                () -> docker.run("logs", id).contains("end"));
        return docker.run("logs", id);
    }

    void adopt(String id) {
        started.add(id);
    }

    Processes.Result exec(String id, String... cmd) {
        List<String> args = new ArrayList<>(List.of("exec", id));
        args.addAll(List.of(cmd));
        return docker.tryRun(args.toArray(String[]::new));
    }

    void awaitLink(String id, String alias) {
        String target = alias.replaceFirst("\\.so\\.[0-9]+$", ".so.") + RealDriver.version(Arch.AMD64);
        AgentProcess.awaitTrue(alias + " -> " + target + " in " + id, Duration.ofSeconds(30),
                () -> target.equals(exec(id, "readlink", LIB_DIR + "/" + alias).output().trim()));
    }

    /** Without aliases: nvidia-smi cannot find NVML, python cannot load libcuda.so.1. */
    void assertBroken(String id) {
        Processes.Result smi = exec(id, "nvidia-smi");
        assertThat(smi.exitCode()).as(smi.output()).isEqualTo(NVML_NOT_FOUND);
        assertThat(smi.output()).contains("couldn't find libnvidia-ml.so");
        assertThat(exec(id, "python3", "-c", CU_INIT).output()).contains("libcuda.so.1: cannot open shared object file");
    }

    /** After the repair: the real libraries load (no GPU here: nvidia-smi then finds no device, cuInit 100). */
    void awaitWorking(String id) {
        awaitLink(id, "libnvidia-ml.so.1");
        awaitLink(id, "libcuda.so.1");
        Processes.Result loaded = exec(id, "nvidia-smi");
        assertThat(loaded.exitCode()).as(loaded.output()).isNotEqualTo(NVML_NOT_FOUND).isNotZero();
        assertThat(loaded.output()).doesNotContain("couldn't find libnvidia-ml.so");
        assertThat(exec(id, "python3", "-c", CU_INIT).output().trim()).isEqualTo("cuInit 100");
    }

    @Override
    public void close() {
        List<String> ids;
        synchronized (started) {
            ids = List.copyOf(started);
            started.clear();
        }
        docker.removeContainers(ids);
    }
}
