package io.driveralias.agent.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * A CPU cgroup of its own for a process, as the kubelet gives each pod. The agent's threads rely
 * on it: its port serves at nice 10 so that the repairs come first, and nice weighs only within
 * a cgroup. On a test machine whose processes all share one cgroup, a busy loop at nice 0 beside
 * the test outweighs the port ten to one, which no node running the agent as a pod has; the tests
 * that measure the port under load put the agent, and the pod attacking it, each in one of these.
 * cgroup v1 (a {@code cpu} hierarchy) or v2 (the {@code cpu} controller enabled at the root); as
 * root only. Default shares (1024, weight 100), no limit, unless {@link #cpuRequest} sets the
 * weight a pod's CPU request gets.
 */
public final class PodCgroup implements AutoCloseable {

    private final Path dir;
    private final Path root;

    private PodCgroup(Path root, Path dir) {
        this.root = root;
        this.dir = dir;
    }

    /** A new cgroup {@code name} under the CPU controller's root, or why there is none. */
    public static PodCgroup create(String name) {
        Path v1 = Path.of("/sys/fs/cgroup/cpu");
        Path v2 = Path.of("/sys/fs/cgroup");
        Path root;
        if (Files.exists(v1.resolve("cpu.shares"))) {
            root = v1;
        } else if (controllersInclude(v2.resolve("cgroup.subtree_control"), "cpu")) {
            root = v2;
        } else {
            throw new IllegalStateException("no CPU cgroup controller at " + v1 + " or enabled at " + v2
                    + ": the port's nice can only be measured as a pod has it with one");
        }
        Path dir = root.resolve(name);
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot make the cgroup " + dir + " (the tests run as root)", e);
        }
        return new PodCgroup(root, dir);
    }

    private static boolean controllersInclude(Path file, String controller) {
        try {
            return Files.exists(file) && List.of(Files.readString(file).trim().split("\\s+")).contains(controller);
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * The weight the kubelet gives a pod that requests {@code millicores} of CPU: cgroup v1
     * {@code cpu.shares} = millicores × 1024 / 1000, at least 2; v2 {@code cpu.weight} converted
     * from those shares as the kubelet converts them. Under a saturated CPU the pods get CPU in
     * proportion to these weights: a pod requesting 20m gets about 1/51 of what one requesting a
     * whole CPU gets. No limit (no quota), as the agent's DaemonSet has none.
     */
    public PodCgroup cpuRequest(int millicores) {
        long shares = Math.max(2, millicores * 1024L / 1000);
        try {
            if (root.endsWith("cpu")) {
                Files.writeString(dir.resolve("cpu.shares"), Long.toString(shares));
            } else {
                Files.writeString(dir.resolve("cpu.weight"), Long.toString(1 + (shares - 2) * 9999 / 262142));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot set the CPU weight of " + dir, e);
        }
        return this;
    }

    /**
     * Moves one thread of a process into this cgroup (cgroup v1's {@code tasks}; v2 moves threads
     * only inside a threaded subtree, which these cgroups are not).
     */
    public PodCgroup addThread(long tid) {
        if (!root.endsWith("cpu")) {
            throw new IllegalStateException("one thread alone can be weighed in cgroup v1 only; this machine has v2");
        }
        try {
            Files.writeString(dir.resolve("tasks"), Long.toString(tid));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot move thread " + tid + " into " + dir, e);
        }
        return this;
    }

    /** Moves the process, every thread of it, into this cgroup; its children follow it. */
    public PodCgroup add(long pid) {
        try {
            Files.writeString(dir.resolve("cgroup.procs"), Long.toString(pid));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot move " + pid + " into " + dir, e);
        }
        return this;
    }

    /**
     * Moves whatever still runs here back to the root, and removes the cgroup: a process that was
     * just killed may still be exiting (the cgroup is busy until it is gone), so for up to 5 s.
     */
    @Override
    public void close() {
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (true) {
            try {
                if (Files.exists(dir.resolve("cgroup.procs"))) {
                    for (String pid : Files.readString(dir.resolve("cgroup.procs")).split("\\s+")) {
                        if (!pid.isEmpty()) {
                            try {
                                Files.writeString(root.resolve("cgroup.procs"), pid);
                            } catch (IOException gone) {
                                // exited meanwhile
                            }
                        }
                    }
                }
                Files.deleteIfExists(dir);
                return;
            } catch (IOException e) {
                if (System.nanoTime() > deadline) {
                    System.err.println("cgroup " + dir + " left behind: " + e);
                    return;
                }
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    @Override
    public String toString() {
        return dir.toString();
    }
}
