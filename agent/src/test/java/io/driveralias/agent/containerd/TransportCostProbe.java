package io.driveralias.agent.containerd;

import io.driveralias.agent.fs.ProcessStartTime;
import io.driveralias.agent.live.ContainerRuntime;
import io.driveralias.agent.live.ContainerRuntimeException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Run by {@link ContainerdTransportCost} in a JVM of its own with the agent's shipped options: what
 * containerd's transport costs the agent, through the adapter's own entry points (whatever client
 * is under them). Prints one {@code key=value} line per figure:
 * <ul>
 * <li>a container's description ({@link ContainerdRuntime#describe}: its record, its task, its
 * snapshot's mounts, three calls), and a single call ({@link ContainerdRuntime#ping}: Version),
 * each warm (after {@code warmup} of them) in {@code rounds} rounds of {@code calls}: the CPU of
 * the calling thread and of the transport's own threads (named {@code containerd*}), the whole
 * process's CPU (JIT and GC included), and the bytes those threads allocated, per operation;</li>
 * <li>events: once subscribed it prints {@code subscribed}, the driver makes events with
 * {@code ctr}, and it prints the same figures per event once {@code events} have come, counted
 * from the subscription (the threads' idle wake-ups included);</li>
 * <li>loaded classes and RSS before the runtime was made and at the end.</li>
 * </ul>
 */
public final class TransportCostProbe {

    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private TransportCostProbe() {
    }

    /** args: address, state dir, container id, warm-up, rounds, calls per round, events expected. */
    public static void main(String[] args) throws Exception {
        String address = args[0];
        String id = args[2];
        int warmup = Integer.parseInt(args[3]);
        int rounds = Integer.parseInt(args[4]);
        int calls = Integer.parseInt(args[5]);
        int events = Integer.parseInt(args[6]);
        System.gc();
        print("before.classes", ManagementFactory.getClassLoadingMXBean().getLoadedClassCount());
        print("before.rssKiB", rssKiB());
        try (ContainerdRuntime runtime = new ContainerdRuntime(new ContainerdRuntime.Settings(address, "k8s.io", args[1], "/proc",
                Set.of("nvidia")), new ProcessStartTime("/proc", Clock.systemUTC()))) {
            System.out.println("connected " + runtime.connect());
            runtime.warmUp();
            for (int i = 0; i < warmup; i++) {
                runtime.describe(id);
                runtime.ping();
            }
            measure("describe", rounds, calls, () -> runtime.describe(id));
            measure("call", rounds, calls, () -> {
                if (!runtime.ping()) {
                    throw new IllegalStateException("ping failed");
                }
            });
            events(runtime, events);
            System.gc();
            print("after.classes", ManagementFactory.getClassLoadingMXBean().getLoadedClassCount());
            print("after.rssKiB", rssKiB());
        }
        System.out.println("done");
    }

    @FunctionalInterface
    private interface Op {
        void run() throws ContainerRuntimeException;
    }

    /** Figures of one phase: the threads' CPU and allocation, and the process's CPU, at its start. */
    private record Mark(long threadsCpuNanos, long transportCpuNanos, long allocatedBytes, long processNanos, long wallNanos) {
        static Mark now(long caller) {
            long cpu = 0;
            long transport = 0;
            long allocated = 0;
            for (long thread : measuredThreads(caller)) {
                long c = Math.max(0, THREADS.getThreadCpuTime(thread));
                cpu += c;
                transport += thread == caller ? 0 : c;
                allocated += Math.max(0, THREADS.getThreadAllocatedBytes(thread));
            }
            return new Mark(cpu, transport, allocated, processCpuNanos(), System.nanoTime());
        }

        /** This phase's figures per operation: threads' CPU, the transport threads' part, process CPU (ms), allocated KiB. */
        double[] per(Mark end, int ops) {
            return new double[] {(end.threadsCpuNanos - threadsCpuNanos) / 1e6 / ops, (end.transportCpuNanos - transportCpuNanos) / 1e6 / ops,
                (end.processNanos - processNanos) / 1e6 / ops, (end.allocatedBytes - allocatedBytes) / 1024.0 / ops};
        }
    }

    private static void measure(String name, int rounds, int calls, Op op) throws ContainerRuntimeException {
        long caller = Thread.currentThread().threadId();
        double[][] figures = new double[rounds][];
        for (int r = 0; r < rounds; r++) {
            Mark start = Mark.now(caller);
            for (int i = 0; i < calls; i++) {
                op.run();
            }
            figures[r] = start.per(Mark.now(caller), calls);
        }
        report(name, figures);
    }

    /**
     * The subscription, then {@code expected} events read on this thread as the agent's event loop
     * reads them; the driver makes them once it reads {@code subscribed} and says how many it made
     * on stdin when it is done (fewer only if ctr failed).
     */
    private static void events(ContainerdRuntime runtime, int expected) throws Exception {
        long caller = Thread.currentThread().threadId();
        try (ContainerRuntime.EventStream stream = runtime.events(Optional.empty())) {
            Mark start = Mark.now(caller);
            System.out.println("subscribed");
            int seen = 0;
            while (seen < expected && stream.next().isPresent()) {
                seen++;
            }
            Mark end = Mark.now(caller);
            print("events.count", seen);
            print("events.ms", (end.wallNanos() - start.wallNanos()) / 1_000_000);
            report("event", new double[][] {start.per(end, seen)});
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII)).readLine();
        }
    }

    /** The calling thread, and the transport's own threads (named containerd...). */
    private static List<Long> measuredThreads(long caller) {
        List<Long> ids = new ArrayList<>(List.of(caller));
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().startsWith("containerd")) {
                ids.add(t.threadId());
            }
        }
        return ids;
    }

    /** Each figure's median over the rounds, and its range. */
    private static void report(String name, double[][] rounds) {
        String[] keys = {"threadsCpuMs", "transportThreadsCpuMs", "processCpuMs", "allocatedKiB"};
        for (int k = 0; k < keys.length; k++) {
            int key = k;
            System.out.printf("%s.%s=%s%n", name, keys[k], spread(Arrays.stream(rounds).mapToDouble(r -> r[key]).toArray()));
        }
    }

    /** Median, then min..max of the rounds. */
    private static String spread(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return String.format("%.4f (%.4f..%.4f)", sorted[sorted.length / 2], sorted[0], sorted[sorted.length - 1]);
    }

    private static void print(String key, long value) {
        System.out.println(key + "=" + value);
    }

    /** utime + stime of the whole process, in nanoseconds (clock ticks of 10 ms). */
    private static long processCpuNanos() {
        try {
            String stat = Files.readString(Path.of("/proc/self/stat"));
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * 10_000_000L;
        } catch (IOException e) {
            return 0;
        }
    }

    private static long rssKiB() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        return -1;
    }
}
