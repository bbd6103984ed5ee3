package io.driveralias.agent.it;

import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.Processes;
import io.driveralias.agent.testing.TestImages;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** Starts and inspects test containers the way the NVIDIA runtime would have made them. */
final class GpuContainers implements AutoCloseable {

    private final DockerHarness docker;
    private final List<String> started = Collections.synchronizedList(new ArrayList<>());

    GpuContainers(DockerHarness docker) {
        this.docker = docker;
    }

    /** docker run -d with the driver files mounted read-only into {@code libDir}; runs sleep. */
    String start(String image, String libDir, String... options) {
        return run(image, libDir, List.of("sleep", "600"), options);
    }

    String run(String image, String libDir, List<String> command, String... options) {
        List<String> args = new ArrayList<>(List.of("run", "-d"));
        if (libDir != null) {
            args.addAll(TestImages.driverMounts(libDir));
        }
        args.addAll(List.of(options));
        args.add(image);
        args.addAll(command);
        String id = docker.run(args.toArray(String[]::new));
        started.add(id);
        return id;
    }

    /** Removes this container too when done. */
    void adopt(String id) {
        started.add(id);
    }

    Processes.Result exec(String id, String... cmd) {
        List<String> args = new ArrayList<>(List.of("exec", id));
        args.addAll(List.of(cmd));
        return docker.tryRun(args.toArray(String[]::new));
    }

    String readlink(String id, String path) {
        return exec(id, "readlink", path).output().trim();
    }

    void awaitNvidiaSmi(String id) {
        AgentProcess.awaitTrue("nvidia-smi to work in " + id, Duration.ofSeconds(20),
                () -> exec(id, "nvidia-smi").exitCode() == 0);
    }

    void awaitLink(String id, String path, String target) {
        AgentProcess.awaitTrue(path + " -> " + target + " in " + id, Duration.ofSeconds(20),
                () -> target.equals(readlink(id, path)));
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
