package io.driveralias.agent.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A real Podman for the integration tests: Debian's, as root, its Docker-compatible API served
 * by a private {@code podman system service} on a socket under a temp dir, with its own storage
 * (overlay: graph root, run root), temp dir, events file and network configuration, so that
 * nothing of the machine's own containers, images or settings is read or changed. Two things
 * remain: Podman 4.3 adds an imported image's digests to its blob cache in
 * {@code /var/lib/containers/cache} whatever the storage, and a container on Podman's default
 * network would write the host's netavark state (the tests use {@code --network none}). Tests drive it
 * through the {@code docker} CLI on that socket ({@link #docker()}), as a Podman user with
 * Docker tools does, independently of the code under test; {@link #close} removes its
 * containers, stops it and removes its directory.
 */
public final class PodmanHarness implements AutoCloseable {

    private final Path dir;
    private final Map<String, String> environment;
    private final DockerHarness docker;
    private Process service;

    private PodmanHarness(Path dir) {
        this.dir = dir;
        this.environment = Map.of("CONTAINERS_CONF", dir.resolve("containers.conf").toString(),
                "CONTAINERS_STORAGE_CONF", dir.resolve("storage.conf").toString());
        this.docker = DockerHarness.client("unix://" + dir.resolve("podman.sock"));
    }

    public static PodmanHarness start() {
        try {
            PodmanHarness podman = new PodmanHarness(Files.createTempDirectory("daa-podman-"));
            podman.configure(List.of());
            podman.configure(podman.ownLimits());
            podman.startService();
            return podman;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The docker CLI on Podman's socket; its {@link DockerHarness#host()} is what the agent's {@code --docker-host} takes. */
    public DockerHarness docker() {
        return docker;
    }

    /** Where Podman keeps layers and containers (its {@code DockerRootDir}). */
    private Path graphRoot() {
        return dir.resolve("root");
    }

    /**
     * Podman gives a root's containers RLIMIT_NOFILE and RLIMIT_NPROC above its own, which runc
     * cannot raise where the machine withholds CAP_SYS_RESOURCE (this project's CI does): they get
     * the service's own limits, which Podman sets itself as it starts (NPROC 32768 here, below
     * its parent's). Read from a first start that goes no further than its socket.
     */
    private List<String> ownLimits() throws IOException {
        Process first = launch();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (!Files.exists(socket())) {
                if (!first.isAlive() || System.nanoTime() > deadline) {
                    throw new AssertionError("podman system service did not make its socket: " + tail(log()));
                }
                DockerHarness.sleep(50);
            }
            List<String> limits = new ArrayList<>();
            List<String> table = Files.readAllLines(Path.of("/proc/" + first.pid() + "/limits"));
            hardLimit(table, "Max open files").ifPresent(n -> limits.add("nofile=" + n + ":" + n));
            hardLimit(table, "Max processes").ifPresent(n -> limits.add("nproc=" + n + ":" + n));
            return limits;
        } finally {
            Processes.terminate(first, 30);
            Files.deleteIfExists(socket());
        }
    }

    private void configure(List<String> ulimits) throws IOException {
        Files.writeString(dir.resolve("containers.conf"), """
                [containers]
                default_ulimits = [%s]
                [engine]
                cgroup_manager = "cgroupfs"
                events_logger = "file"
                events_logfile_path = "%s"
                tmp_dir = "%s"
                [network]
                network_config_dir = "%s"
                """.formatted(String.join(", ", ulimits.stream().map(u -> "\"" + u + "\"").toList()),
                dir.resolve("tmp/events.log"), dir.resolve("tmp"), dir.resolve("networks")));
        Files.writeString(dir.resolve("storage.conf"), """
                [storage]
                driver = "overlay"
                graphroot = "%s"
                runroot = "%s"
                """.formatted(graphRoot(), dir.resolve("runroot")));
    }

    /** A hard limit in a {@code /proc/<pid>/limits} table; empty when unlimited. */
    private static Optional<String> hardLimit(List<String> table, String name) {
        for (String line : table) {
            if (line.startsWith(name)) {
                String[] words = line.substring(name.length()).trim().split("\\s+");
                return words.length > 1 && words[1].matches("[0-9]+") ? Optional.of(words[1]) : Optional.empty();
            }
        }
        return Optional.empty();
    }

    private Path socket() {
        return dir.resolve("podman.sock");
    }

    private Path log() {
        return dir.resolve("service.log");
    }

    private Process launch() {
        try {
            ProcessBuilder pb = new ProcessBuilder("podman", "system", "service", "--time=0", docker.host())
                    .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log().toFile()));
            pb.environment().putAll(environment);
            return pb.start();
        } catch (IOException e) {
            throw new AssertionError("cannot start podman (apt-get install podman; .ci/run does): " + e, e);
        }
    }

    private void startService() {
        service = launch();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        while (System.nanoTime() < deadline) {
            // Podman answers /version in seconds (it gathers its host's facts first): be patient.
            if (docker.tryRun("version", "--format", "{{.Server.APIVersion}}").exitCode() == 0) {
                return;
            }
            if (!service.isAlive()) {
                throw new AssertionError("podman system service exited: " + tail(log()));
            }
            DockerHarness.sleep(200);
        }
        throw new AssertionError("podman system service did not answer within 90 s: " + tail(log()));
    }

    /** Its containers removed, the service stopped, its mounts and directory gone. */
    @Override
    public void close() {
        Processes.run(List.of("podman", "--remote", "--url", docker.host(), "rm", "--force", "--all", "--time", "0"), 120);
        if (service != null) {
            Processes.terminate(service, 30);
        }
        // Podman leaves a conmon per exec session (`docker exec`) waiting 300 s to hand out its exit
        // status, and their cleanup commands open the store again: end those of this directory.
        String mine = dir.toString();
        ProcessHandle.allProcesses()
                .filter(p -> p.info().commandLine().map(c -> c.contains(mine)).orElse(false))
                .forEach(ProcessHandle::destroyForcibly);
        // containers/storage bind-mounts its overlay directory on itself (made private).
        Processes.run(List.of("sh", "-c", "grep -o ' " + mine + "[^ ]*' /proc/mounts | sort -r | xargs -r -n1 umount -l"), 30);
        Processes.run(List.of("rm", "-rf", mine), 120);
    }

    private static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
        } catch (IOException e) {
            return "(no log)";
        }
    }
}
