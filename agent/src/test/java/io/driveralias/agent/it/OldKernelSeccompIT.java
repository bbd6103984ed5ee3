package io.driveralias.agent.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.driveralias.agent.testing.AgentImage;
import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DaemonSetAgent;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.Processes;
import io.driveralias.agent.testing.RealDriver.Arch;
import io.driveralias.agent.testing.RealDriver;
import io.driveralias.agent.testing.SharedEngines;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * Old kernels, played by seccomp: the agent in its container with the DaemonSet's settings
 * ({@link DaemonSetAgent}, as {@code LeastPrivilegeIT} runs it) under a profile that answers
 * ENOSYS for the system calls a RHEL 7 (3.10) kernel does not have, and under one that answers
 * EPERM for openat2 only, as Docker 19.03's default profile does. Either way the agent probes
 * openat2 once, falls back to its O_NOFOLLOW walk, says so, and repairs running and new
 * containers with NVIDIA's real driver files.
 */
@Timeout(300)
@ResourceLock(SharedEngines.DOCKER)
class OldKernelSeccompIT {

    /** Linux 3.10 has none of these (the version that added each: see the syscall's man page). */
    static final List<String> NEWER_THAN_3_10 = List.of("openat2", "pidfd_open", "pidfd_send_signal", "renameat2",
            "statx", "close_range", "clone3", "faccessat2", "rseq", "copy_file_range", "execveat", "memfd_create",
            "preadv2", "pwritev2", "io_uring_setup", "membarrier");
    static final int ENOSYS = 38;
    static final int EPERM = 1;

    static DockerHarness docker;
    static DaemonSetAgent manifest;
    static String agentImage;
    static UnaryOperator<String> hostPaths;
    static UnaryOperator<String> mountPaths;

    @TempDir
    static Path profiles;

    @BeforeAll
    static void setUp() {
        docker = DockerHarness.get();
        assumeTrue(docker.host().startsWith("unix://"), "the agent container needs the engine's socket");
        manifest = DaemonSetAgent.load();
        hostPaths = DaemonSetAgent.hostPathsOf(docker);
        mountPaths = DaemonSetAgent.mountPathsOf(docker);
        agentImage = AgentImage.get(docker);
    }

    @Test
    void aRhel7KernelsMissingSystemCallsAnsweredEnosys() throws IOException {
        trial("enosys", profile("enosys", NEWER_THAN_3_10, ENOSYS), "ENOSYS");
    }

    @Test
    void docker1903sDefaultProfileRefusingOpenat2WithEperm() throws IOException {
        trial("eperm", profile("eperm", List.of("openat2"), EPERM), "EPERM");
    }

    private static void trial(String label, Path profile, String errno) {
        try (RealContainers containers = new RealContainers(docker)) {
            String before = containers.start();
            String id = startAgent(label, profile);
            try {
                awaitLog(id, "first reconcile");
                assertThat(log(id)).contains("openat2 answered " + errno + " (a kernel before 5.6, or a seccomp profile"
                        + " without it): container paths are resolved by the O_NOFOLLOW walk");
                containers.awaitWorking(before);
                String after = containers.start("--user", "1000:1000");
                containers.awaitWorking(after);
                // Before start: the aliases written into the writable layer (renameat2 refused
                // in the ENOSYS case: the check-then-rename fallback).
                String created = containers.create();
                Path alias = Path.of(docker.run("inspect", "-f", "{{.GraphDriver.Data.UpperDir}}", created),
                        RealContainers.LIB_DIR.substring(1), "libcuda.so.1");
                AgentProcess.awaitTrue("libcuda.so.1 in the writable layer of " + created, Duration.ofSeconds(20),
                        () -> Files.isSymbolicLink(alias));
                docker.run("start", created);
                awaitLog(id, "repaired container " + created.substring(0, 12));
                assertThat(log(id)).containsPattern("repaired container " + created.substring(0, 12)
                        + " \\([^)]*\\) before start: 9 link");
                containers.awaitWorking(created);
                String all = log(id);
                assertThat(all).doesNotContainPattern("\"log.level\": ?\"(WARN|ERROR)\"");
                docker.run("stop", "-t", String.valueOf(manifest.terminationGraceSeconds()), id);
                assertThat(docker.run("inspect", "-f", "{{.State.ExitCode}}", id)).as("exit code after SIGTERM")
                        .isEqualTo("0");
            } catch (AssertionError | RuntimeException e) {
                throw new AssertionError(label + ": " + e.getMessage() + "\n--- agent log ---\n" + log(id), e);
            } finally {
                docker.tryRun("rm", "-f", id);
            }
        }
    }

    private static String startAgent(String label, Path profile) {
        DaemonSetAgent.Substitutions substitutions = new DaemonSetAgent.Substitutions(hostPaths, mountPaths,
                Map.of("spec.nodeName", "old-kernel-it", "metadata.uid", ""),
                Map.of("DRIVER_ALIAS_KUBERNETES", "off", "DRIVER_ALIAS_LISTEN", "127.0.0.1:" + AgentProcess.freePort(),
                        "DRIVER_ALIAS_HOST_LIB_DIR", RealDriver.libraryDir(Arch.AMD64).toString()),
                java.util.Set.of());
        List<String> args = new ArrayList<>(List.of("run", "-d", "--label", "daa-test=old-kernel-" + label));
        args.addAll(manifest.dockerRunOptions(substitutions));
        // The manifest says RuntimeDefault; an old node's runtime default is what is played here.
        args.addAll(List.of("--security-opt", "seccomp=" + profile));
        // As in LeastPrivilegeIT: a host network for the listener; the driver files at their host
        // path, where the agent finds the host's driver when /proc/1/root is refused (this sandbox).
        args.addAll(List.of("--network", "host"));
        Path driver = RealDriver.libraryDir(Arch.AMD64);
        args.addAll(List.of("--mount", "type=bind,source=" + driver + ",target=" + driver + ",readonly"));
        args.add(agentImage);
        args.addAll(manifest.args());
        return docker.run(args.toArray(String[]::new));
    }

    /** Everything allowed but {@code refused}, which answer {@code errno}. */
    private static Path profile(String name, List<String> refused, int errno) throws IOException {
        String names = String.join("\", \"", refused);
        Path file = profiles.resolve(name + ".json");
        Files.writeString(file, """
                {"defaultAction": "SCMP_ACT_ALLOW",
                 "syscalls": [{"names": ["%s"], "action": "SCMP_ACT_ERRNO", "errnoRet": %d}]}
                """.formatted(names, errno));
        return file;
    }

    private static void awaitLog(String id, String text) {
        AgentProcess.awaitTrue("'" + text + "' in the agent container's log", Duration.ofSeconds(40), () -> {
            if (!"true".equals(docker.run("inspect", "-f", "{{.State.Running}}", id))) {
                throw new AssertionError("the agent container exited: " + log(id));
            }
            return log(id).contains(text);
        });
    }

    private static String log(String id) {
        return Processes.run(docker.docker("logs", id)).output();
    }
}
