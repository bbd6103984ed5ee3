package io.driveralias.agent.ldcache;

import io.driveralias.agent.fs.PathResolver;
import io.driveralias.agent.fs.RootFs;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Run by {@link LdCacheShippedHeapTest} in a JVM of its own with the agent's shipped options:
 * updates the caches of the roots it is given, as the agent does ({@code libcuda.so.1} in the C
 * library's directory, flags from the cache), one after the other ({@code each}) or all at once
 * ({@code together}), and prints one line per update and the peak heap. Heap use is sampled
 * every 0.1 ms; what it reports includes garbage not yet collected, so it is an upper bound of
 * what the updates held.
 */
public final class LdCacheHeapProbe {

    private static final AtomicLong PEAK = new AtomicLong();

    private LdCacheHeapProbe() {
    }

    public static void main(String[] args) throws Exception {
        Thread sampler = Thread.ofPlatform().daemon().start(LdCacheHeapProbe::sample);
        List<String> roots = List.of(args).subList(1, args.length);
        if (args[0].equals("each")) {
            for (String root : roots) {
                System.gc();
                long before = used();
                PEAK.set(before);
                update(root, before);
            }
        } else {
            CountDownLatch start = new CountDownLatch(1);
            List<Thread> threads = new ArrayList<>();
            System.gc();
            long before = used();
            PEAK.set(before);
            for (String root : roots) {
                threads.add(Thread.ofPlatform().start(() -> {
                    try {
                        start.await();
                        update(root, before);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }));
            }
            start.countDown();
            for (Thread t : threads) {
                t.join();
            }
        }
        sampler.interrupt();
        System.out.printf("peak heap used: %d KiB (max heap %d KiB)%n", PEAK.get() / 1024,
                Runtime.getRuntime().maxMemory() / 1024);
    }

    private static void update(String rootPath, long heapBefore) {
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long allocated = threads.getCurrentThreadAllocatedBytes();
        long start = System.nanoTime();
        LdCacheUpdate update;
        try (RootFs root = RootFs.openHostDirectory(rootPath, PathResolver.detect(false))) {
            update = new LdCacheUpdater().update(root, List.of(Alias.of(BigCaches.LIB_DIR, "libcuda.so.1")));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        long millis = (System.nanoTime() - start) / 1_000_000;
        System.out.printf("update root=%s outcome=%s reason=%s ms=%d allocatedKiB=%d peakHeapKiB=%d heapBeforeKiB=%d message=%s%n",
                rootPath, update.outcome(), update.reason().map(Enum::name).orElse("-"), millis,
                (threads.getCurrentThreadAllocatedBytes() - allocated) / 1024, PEAK.get() / 1024, heapBefore / 1024,
                update.message());
    }

    private static long used() {
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    private static void sample() {
        while (!Thread.currentThread().isInterrupted()) {
            PEAK.accumulateAndGet(used(), Math::max);
            try {
                Thread.sleep(0, 100_000);
            } catch (InterruptedException e) {
                return;
            }
        }
    }
}
