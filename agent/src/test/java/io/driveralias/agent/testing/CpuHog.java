package io.driveralias.agent.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

/**
 * A loaded node: a busy loop on every core, for as long as it is open. {@code nice} 0 (the
 * default) competes with dockerd and the agent as a training job's data loaders would; a
 * positive value leaves them the CPU first.
 */
public final class CpuHog implements AutoCloseable {

    private final List<Process> loops = new ArrayList<>();
    private final List<PodCgroup> pods = new ArrayList<>();
    /**
     * The loops are the test JVM's children and outlive it: a run ended by a timeout (SIGTERM to
     * Maven, whose forked JVM then exits) would leave two busy cores behind for every later run.
     * A JVM killed outright runs no hook: each loop also ends once the JVM is gone ({@link #LOOP}).
     */
    private final Thread onExit = new Thread(this::stop, "cpu-hog-exit");
    /**
     * Busy, and every few tens of milliseconds a look whether the JVM that started it is still
     * there (not the parent-death signal: that follows the thread that started the loop, which a
     * test's timeout thread may end first).
     */
    private static final String LOOP = "while kill -0 " + ProcessHandle.current().pid() + " 2>/dev/null;"
            + " do i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; done";

    public CpuHog(int nice) {
        this(nice, -1);
    }

    /**
     * {@code podCpuRequest} ≥ 0: each loop in a pod's CPU cgroup of its own, weighted as the
     * kubelet weighs a pod that requests that many millicores (the busy training pods of a GPU
     * node); below 0, the loops stay in the caller's cgroup.
     */
    public CpuHog(int nice, int podCpuRequest) {
        int cores = Runtime.getRuntime().availableProcessors();
        try {
            for (int i = 0; i < cores; i++) {
                Process loop = new ProcessBuilder("nice", "-n", String.valueOf(nice), "sh", "-c", LOOP)
                        .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
                loops.add(loop);
                if (podCpuRequest >= 0) {
                    pods.add(PodCgroup.create("daa-busy-pod-" + loop.pid()).cpuRequest(podCpuRequest).add(loop.pid()));
                }
            }
            Runtime.getRuntime().addShutdownHook(onExit);
        } catch (IOException | RuntimeException e) {
            close();
            throw e instanceof IOException io ? new UncheckedIOException(io) : (RuntimeException) e;
        }
    }

    /** {@link #describe(int)}, with each loop's pod and its CPU request when it has one. */
    public static String describe(int nice, int podCpuRequest) {
        return describe(nice) + (podCpuRequest < 0 ? "" : ", each in a pod's CPU cgroup requesting " + podCpuRequest + "m");
    }

    public static String describe(int nice) {
        return "a busy loop on each of " + Runtime.getRuntime().availableProcessors() + " cores, "
                + (nice == 0 ? "not niced" : "nice " + nice);
    }

    @Override
    public void close() {
        try {
            Runtime.getRuntime().removeShutdownHook(onExit);
        } catch (IllegalStateException e) {
            // The JVM is exiting: the hook stops the loops too, and stopping twice is harmless.
        }
        stop();
    }

    private void stop() {
        for (Process p : loops) {
            p.destroyForcibly();
        }
        try {
            for (Process p : loops) {
                p.waitFor();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            // A loop still exiting is moved back to the root by the cgroup's close.
            pods.forEach(PodCgroup::close);
        }
    }
}
