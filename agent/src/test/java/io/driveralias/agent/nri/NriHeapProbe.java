package io.driveralias.agent.nri;

import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Run by {@link NriShippedHeapTest} in a JVM of its own with the agent's shipped options: the NRI
 * plugin on the given socket, with a handler that holds what an agent would (a Synchronize's parts
 * until the last, the last 8 containers started) and counts. A container named {@code probe-exit}
 * makes it print its figures and exit. Heap use is sampled every millisecond; the peak includes
 * garbage not yet collected, so it is an upper bound of what the plugin held.
 */
public final class NriHeapProbe {

    private static final AtomicLong PEAK = new AtomicLong();

    private NriHeapProbe() {
    }

    public static void main(String[] args) throws Exception {
        Thread.ofPlatform().daemon().start(NriHeapProbe::sample);
        AtomicInteger starts = new AtomicInteger();
        AtomicInteger incomplete = new AtomicInteger();
        AtomicInteger synced = new AtomicInteger();
        AtomicInteger notServed = new AtomicInteger();
        List<NriSync> parts = new ArrayList<>();
        Deque<NriContainer> recent = new ArrayDeque<>();
        NriHandler handler = new NriHandler() {
            @Override
            public void connected(NriRuntimeInfo runtime) {
                System.gc();
                System.out.printf("connected %s %s heapAfterGcKiB=%d%n", runtime.name(), runtime.version(), used() / 1024);
                PEAK.set(used());
            }

            @Override
            public void disconnected(String why) {
                System.out.println("disconnected " + why);
            }

            @Override
            public synchronized void synchronize(NriSync part) {
                parts.add(part);
                if (part.last()) {
                    int containers = parts.stream().mapToInt(p -> p.containers().size()).sum();
                    long over = parts.stream().flatMap(p -> p.containers().stream()).filter(c -> !c.complete()).count();
                    System.out.printf("synchronized parts=%d containers=%d incomplete=%d%n", parts.size(), containers, over);
                    synced.addAndGet(containers);
                    parts.clear();
                }
            }

            @Override
            public synchronized void startContainer(NriPod pod, NriContainer container, StartCall call) {
                starts.incrementAndGet();
                if (!container.complete()) {
                    incomplete.incrementAndGet();
                }
                recent.addLast(container);
                if (recent.size() > 8) {
                    recent.removeFirst();
                }
                if (container.name().equals("probe-exit")) {
                    BufferPoolMXBean direct = ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class).stream()
                            .filter(b -> b.getName().equals("direct")).findFirst().orElseThrow();
                    System.out.printf("starts=%d incomplete=%d synced=%d notServed=%d peakHeapKiB=%d maxHeapKiB=%d directKiB=%d%n",
                            starts.get(), incomplete.get(), synced.get(), notServed.get(), PEAK.get() / 1024,
                            Runtime.getRuntime().maxMemory() / 1024, direct.getMemoryUsed() / 1024);
                    Thread.ofPlatform().start(() -> {
                        try {
                            Thread.sleep(300);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                        System.exit(0);
                    });
                }
            }

            @Override
            public void notServed(NriPod pod, NriContainer container, String why) {
                notServed.incrementAndGet();
            }
        };
        NriPlugin plugin = new NriPlugin(Path.of(args[0]), handler);
        plugin.start();
        Thread.currentThread().join();
    }

    private static long used() {
        Runtime r = Runtime.getRuntime();
        return r.totalMemory() - r.freeMemory();
    }

    private static void sample() {
        while (true) {
            PEAK.accumulateAndGet(used(), Math::max);
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                return;
            }
        }
    }
}
