package io.driveralias.agent.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The containerd a newer Docker runs on in the ITs, as a node's own containerd is to Debian's
 * {@code docker.io}: its suite's, private (socket {@code <dir>/containerd/containerd.sock}, as
 * {@code /run/containerd} is beside {@code /run/docker.sock}; root {@code <dir>/containerd-root}),
 * without its CRI and NRI plugins, which Docker does not use. It outlives dockerd's restarts.
 */
final class PrivateContainerd {

    private final Path dir;
    private final DockerRelease release;
    private Process process;

    private PrivateContainerd(Path dir, DockerRelease release) {
        this.dir = dir;
        this.release = release;
    }

    static PrivateContainerd start(Path dir, DockerRelease release) {
        PrivateContainerd containerd = new PrivateContainerd(dir, release);
        containerd.start();
        return containerd;
    }

    Path socket() {
        return dir.resolve("containerd/containerd.sock");
    }

    Path root() {
        return dir.resolve("containerd-root");
    }

    private void start() {
        try {
            Files.createDirectories(dir.resolve("containerd"));
            Path config = dir.resolve("containerd.toml");
            Files.writeString(config, release.containerd2() ? """
                    version = 3
                    root = "%1$s/containerd-root"
                    state = "%1$s/containerd-state"
                    disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime", "io.containerd.cri.v1.images",
                      "io.containerd.nri.v1.nri", "io.containerd.podsandbox.controller.v1.podsandbox",
                      "io.containerd.sandbox.controller.v1.shim"]
                    [grpc]
                      address = "%1$s/containerd/containerd.sock"
                    [ttrpc]
                      address = "%1$s/containerd/containerd.sock.ttrpc"
                    [debug]
                      address = "%1$s/containerd/debug.sock"
                    [plugins.'io.containerd.internal.v1.opt']
                      path = "%1$s/containerd-opt"
                    """.formatted(dir) : """
                    version = 2
                    root = "%1$s/containerd-root"
                    state = "%1$s/containerd-state"
                    disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.nri.v1.nri"]
                    [grpc]
                      address = "%1$s/containerd/containerd.sock"
                    [ttrpc]
                      address = "%1$s/containerd/containerd.sock.ttrpc"
                    [debug]
                      address = "%1$s/containerd/debug.sock"
                    [plugins."io.containerd.internal.v1.opt"]
                      path = "%1$s/containerd-opt"
                    """.formatted(dir));
            ProcessBuilder builder = new ProcessBuilder(release.packageRoot("containerd").resolve("usr/bin/containerd").toString(),
                    "--config", config.toString()).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("containerd.log").toFile()));
            // Its shims are looked up on its PATH: its own package's first, runc the system's.
            builder.environment().put("PATH", String.join(":", release.binDirectories()) + ":" + System.getenv("PATH"));
            process = builder.start();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            if (Files.exists(socket())) {
                return;
            }
            if (!process.isAlive()) {
                throw new AssertionError("containerd exited: " + log());
            }
            DockerHarness.sleep(50);
        }
        throw new AssertionError("containerd did not make its socket within 30 s: " + log());
    }

    /** Stops it, and the shims and container processes dockerd left behind. */
    void stop() {
        if (process != null) {
            Processes.terminate(process, 30);
            process = null;
        }
        String shims = Processes.run(List.of("pgrep", "-f", "containerd-shim.*-address " + socket()), 10).output();
        List<String> pids = new ArrayList<>();
        for (String pid : shims.split("\\s+")) {
            if (pid.matches("[1-9][0-9]*")) {
                pids.add(pid);
            }
        }
        for (String shim : pids) {
            Processes.run(List.of("pkill", "-9", "-P", shim), 10);
            Processes.run(List.of("kill", "-9", shim), 10);
        }
    }

    private String log() {
        try {
            List<String> lines = Files.readAllLines(dir.resolve("containerd.log"));
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
        } catch (IOException e) {
            return "(no log)";
        }
    }
}
