package io.driveralias.agent.live;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(10)
class RepairQueueTest {

    private static final Instant T0 = Instant.parse("2026-11-30T10:00:00Z");

    private static RepairQueue.Key key(String id) {
        return new RepairQueue.Key("docker", id);
    }

    @Test
    void containersOfTwoRuntimesWithTheSameIdAreTwoJobs() throws Exception {
        RepairQueue queue = new RepairQueue(10, Duration.ZERO);
        assertThat(queue.offer(new RepairQueue.Job(key("a"), T0, "start"))).isEqualTo(RepairQueue.Offer.QUEUED);
        assertThat(queue.offer(new RepairQueue.Job(new RepairQueue.Key("containerd", "a"), T0, "start")))
                .isEqualTo(RepairQueue.Offer.QUEUED);
        assertThat(queue.size()).isEqualTo(2);
    }

    @Test
    void aBurstForOneContainerIsOneJobThatKeepsTheFirstArrival() throws Exception {
        RepairQueue queue = new RepairQueue(10, Duration.ZERO);

        assertThat(queue.offer(new RepairQueue.Job(key("a"), T0.plusMillis(5), "create"))).isEqualTo(RepairQueue.Offer.QUEUED);
        assertThat(queue.offer(new RepairQueue.Job(key("a"), T0, "start"))).isEqualTo(RepairQueue.Offer.MERGED);
        assertThat(queue.offer(new RepairQueue.Job(key("a"), T0.plusMillis(9), "reconcile"))).isEqualTo(RepairQueue.Offer.MERGED);

        assertThat(queue.size()).isEqualTo(1);
        RepairQueue.Job job = queue.take();
        assertThat(job.key()).isEqualTo(key("a"));
        assertThat(job.receivedAt()).isEqualTo(T0);
    }

    @Test
    void neverTwoWorkersOnOneContainer() throws Exception {
        RepairQueue queue = new RepairQueue(10, Duration.ZERO);
        queue.offer(new RepairQueue.Job(key("a"), T0, "start"));
        RepairQueue.Job first = queue.take();
        queue.offer(new RepairQueue.Job(key("a"), T0.plusSeconds(1), "start"));
        queue.offer(new RepairQueue.Job(key("b"), T0.plusSeconds(2), "start"));

        // "a" is in flight, so the next worker gets "b" although "a" waited longer.
        assertThat(queue.take().key()).isEqualTo(key("b"));
        CompletableFuture<RepairQueue.Job> blocked = takeLater(queue);
        Thread.sleep(100);
        assertThat(blocked).isNotDone();

        queue.done(first);

        assertThat(blocked.get(5, TimeUnit.SECONDS).key()).isEqualTo(key("a"));
    }

    @Test
    void boundedAndClosable() throws Exception {
        RepairQueue queue = new RepairQueue(2, Duration.ZERO);
        assertThat(queue.offer(new RepairQueue.Job(key("a"), T0, "start"))).isEqualTo(RepairQueue.Offer.QUEUED);
        assertThat(queue.offer(new RepairQueue.Job(key("b"), T0, "start"))).isEqualTo(RepairQueue.Offer.QUEUED);
        assertThat(queue.offer(new RepairQueue.Job(key("c"), T0, "start"))).as("full").isEqualTo(RepairQueue.Offer.FULL);

        queue.close();

        assertThat(queue.take()).isNull();
        assertThat(queue.offer(new RepairQueue.Job(key("d"), T0, "start"))).isEqualTo(RepairQueue.Offer.CLOSED);
    }

    @Test
    void startedContainersGoFirst() throws Exception {
        RepairQueue queue = new RepairQueue(10, Duration.ZERO);
        queue.offer(new RepairQueue.Job(key("a"), T0, "create"));
        queue.offer(new RepairQueue.Job(key("b"), T0.plusMillis(1), "reconcile"));
        queue.offer(new RepairQueue.Job(key("c"), T0.plusMillis(2), "start"));
        queue.offer(new RepairQueue.Job(key("a"), T0.plusMillis(3), "start"));

        assertThat(queue.take().key()).isEqualTo(key("a"));
        assertThat(queue.take().key()).isEqualTo(key("c"));
        assertThat(queue.take().key()).isEqualTo(key("b"));
    }

    @Test
    void aCreatedContainerWaitsForItsStartToJoinIt() throws Exception {
        RepairQueue queue = new RepairQueue(10, Duration.ofMillis(300));
        queue.offer(new RepairQueue.Job(key("a"), T0, "create"));
        CompletableFuture<RepairQueue.Job> taken = takeLater(queue);
        Thread.sleep(100);
        assertThat(taken).as("not yet eligible").isNotDone();

        queue.offer(new RepairQueue.Job(key("a"), T0.plusMillis(40), "start"));

        RepairQueue.Job job = taken.get(5, TimeUnit.SECONDS);
        assertThat(job.trigger()).isEqualTo("start");
        assertThat(job.receivedAt()).isEqualTo(T0);
    }

    @Test
    void aCreatedContainerAloneIsTakenAfterTheDelay() throws Exception {
        RepairQueue queue = new RepairQueue(10, Duration.ofMillis(200));
        long start = System.nanoTime();
        queue.offer(new RepairQueue.Job(key("a"), T0, "create"));

        RepairQueue.Job job = queue.take();

        assertThat(job.trigger()).isEqualTo("create");
        assertThat(System.nanoTime() - start).isGreaterThanOrEqualTo(Duration.ofMillis(150).toNanos());
    }

    /** A neighbour's storm of creates never takes the workers a start needs. */
    @Test
    void otherWorkIsCappedSoThatAStartFindsAWorker() throws Exception {
        RepairQueue queue = new RepairQueue(100, Duration.ZERO, 1);
        queue.offer(new RepairQueue.Job(key("c1"), T0, "create"));
        queue.offer(new RepairQueue.Job(key("c2"), T0, "create"));
        assertThat(queue.take().key()).as("creates newest first").isEqualTo(key("c2"));
        CompletableFuture<RepairQueue.Job> next = takeLater(queue);
        Thread.sleep(100);
        assertThat(next).as("a second create waits while one is in flight").isNotDone();
        queue.offer(new RepairQueue.Job(key("gpu"), T0.plusSeconds(1), "start", 42));
        RepairQueue.Job start = next.get(2, TimeUnit.SECONDS);
        assertThat(start.key()).isEqualTo(key("gpu"));
        assertThat(start.pid()).isEqualTo(42);
    }

    /**
     * A start is taken at once beside its own create while that create is still reading (its
     * description may queue behind a storm of others); the create then may not write, and the
     * start holds the container alone once the create is done.
     */
    @Test
    void aStartGoesBesideItsCreateStillReading() throws Exception {
        RepairQueue queue = new RepairQueue(10, Duration.ZERO, 2);
        RepairQueue.Job create = createTakenThenStartOffered(queue);
        RepairQueue.Job start = takeLater(queue).get(2, TimeUnit.SECONDS);
        assertThat(start.isStart()).isTrue();
        assertThat(start.pid()).isEqualTo(7);

        assertThat(queue.claimWrite(create)).as("the start writes, not the create").isFalse();
        queue.done(create);
        assertThat(queue.busy()).as("the start still holds it").isTrue();
        queue.offer(new RepairQueue.Job(key("a"), T0.plusMillis(40), "reconcile"));
        CompletableFuture<RepairQueue.Job> next = takeLater(queue);
        Thread.sleep(100);
        assertThat(next).as("never two workers writing one container").isNotDone();
        queue.done(start);
        assertThat(next.get(2, TimeUnit.SECONDS).trigger()).isEqualTo("reconcile");
    }

    /** Once a create writes, its start waits for it: never two workers writing one container. */
    @Test
    void aStartWaitsForItsOwnCreateWriting() throws Exception {
        RepairQueue queue = new RepairQueue(10, Duration.ZERO, 2);
        queue.offer(new RepairQueue.Job(key("a"), T0, "create"));
        RepairQueue.Job create = queue.take();
        assertThat(queue.claimWrite(create)).isTrue();
        queue.offer(new RepairQueue.Job(key("a"), T0.plusMillis(20), "start", 7));
        CompletableFuture<RepairQueue.Job> start = takeLater(queue);
        Thread.sleep(100);
        assertThat(start).isNotDone();
        queue.done(create);
        RepairQueue.Job taken = start.get(2, TimeUnit.SECONDS);
        assertThat(taken.isStart()).isTrue();
        queue.done(taken);
        assertThat(queue.busy()).isFalse();
    }

    /** Only one start beside a reading create; a second start of the same container waits for the first. */
    @Test
    void oneStartBesideACreateAtMost() throws Exception {
        RepairQueue queue = new RepairQueue(10, Duration.ZERO, 2);
        RepairQueue.Job create = createTakenThenStartOffered(queue);
        RepairQueue.Job start = queue.take();
        assertThat(queue.hold(key("a"), System.nanoTime() + 100_000_000L)).as("inside the runtime's start").isFalse();
        queue.done(start);
        assertThat(queue.hold(key("a"), System.nanoTime() + 100_000_000L)).as("beside the reading create again").isTrue();
        assertThat(queue.claimWrite(create)).isFalse();
        queue.done(create);
        queue.release(key("a"));
        assertThat(queue.busy()).isFalse();
    }

    /** Behind a storm of creates, the newest is served next: it may still be written before its start. */
    @Test
    void createsGoNewestFirstThenReconcilesOldestFirst() throws Exception {
        RepairQueue queue = new RepairQueue(100, Duration.ZERO, 1);
        queue.offer(new RepairQueue.Job(key("r1"), T0, "reconcile"));
        for (int i = 0; i < 5; i++) {
            queue.offer(new RepairQueue.Job(key("storm-" + i), T0.plusMillis(i), "create"));
        }
        queue.offer(new RepairQueue.Job(key("r2"), T0.plusMillis(9), "reconcile"));
        List<String> order = new java.util.ArrayList<>();
        for (int i = 0; i < 7; i++) {
            RepairQueue.Job job = queue.take();
            order.add(job.key().containerId());
            queue.done(job);
        }
        assertThat(order).containsExactly("storm-4", "storm-3", "storm-2", "storm-1", "storm-0", "r1", "r2");
    }

    /** A start with nothing to write (a sandbox's) waits behind creates, as other work does: it is only counted. */
    @Test
    void aPlainStartGoesBehindCreates() throws Exception {
        RepairQueue queue = new RepairQueue(10, Duration.ZERO, 1);
        queue.offer(new RepairQueue.Job(key("sandbox"), T0, RepairQueue.PLAIN_START, 5));
        queue.offer(new RepairQueue.Job(key("gpu"), T0.plusMillis(1), "create"));
        RepairQueue.Job first = queue.take();
        assertThat(first.key()).isEqualTo(key("gpu"));
        queue.done(first);
        RepairQueue.Job second = queue.take();
        assertThat(second.trigger()).isEqualTo(RepairQueue.PLAIN_START);
        assertThat(second.pid()).isEqualTo(5);
    }

    /** Container "a"'s create taken by a worker (still reading), then its start offered with its process, 7. */
    private static RepairQueue.Job createTakenThenStartOffered(RepairQueue queue) throws InterruptedException {
        queue.offer(new RepairQueue.Job(key("a"), T0, "create"));
        RepairQueue.Job create = queue.take();
        queue.offer(new RepairQueue.Job(key("a"), T0.plusMillis(20), "start", 7));
        return create;
    }

    /** A worker's take, waiting on another thread. */
    private static CompletableFuture<RepairQueue.Job> takeLater(RepairQueue queue) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return queue.take();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
    }
    /**
     * An idle worker is woken one at a time, not all at once: no job may be left waiting while every
     * worker sleeps. Eight workers, creates that wait a few ms (timers), a cap on other work, starts
     * held outside the workers (NRI's) and bursts for the same containers, from four threads.
     */
    @Test
    void eightWorkersWokenOneAtATimeLeaveNoJobBehind() throws Exception {
        RepairQueue queue = new RepairQueue(100_000, Duration.ofMillis(3), 2);
        java.util.concurrent.atomic.AtomicInteger taken = new java.util.concurrent.atomic.AtomicInteger();
        List<Thread> workers = new java.util.ArrayList<>();
        for (int w = 0; w < 8; w++) {
            Thread t = new Thread(() -> {
                try {
                    for (RepairQueue.Job job; (job = queue.take()) != null; ) {
                        taken.incrementAndGet();
                        if (job.key().containerId().hashCode() % 7 == 0) {
                            Thread.sleep(1);
                        }
                        queue.done(job);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            t.start();
            workers.add(t);
        }
        String[] triggers = {"create", "start", "reconcile", RepairQueue.PLAIN_START};
        List<Thread> producers = new java.util.ArrayList<>();
        for (int p = 0; p < 4; p++) {
            int seed = p;
            Thread t = new Thread(() -> {
                java.util.Random random = new java.util.Random(seed);
                try {
                    for (int i = 0; i < 5_000; i++) {
                        RepairQueue.Key k = key("c" + random.nextInt(300));
                        if (seed == 3 && i % 10 == 0) {
                            if (queue.hold(k, System.nanoTime() + 50_000_000L)) {
                                queue.release(k);
                            }
                            continue;
                        }
                        queue.offer(new RepairQueue.Job(k, T0.plusMillis(i), triggers[random.nextInt(triggers.length)]));
                        if (i % 500 == 0) {
                            Thread.sleep(2);
                        }
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            t.start();
            producers.add(t);
        }
        for (Thread t : producers) {
            t.join();
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while ((queue.size() > 0 || queue.busy()) && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        int left = queue.size();
        queue.close();
        for (Thread t : workers) {
            t.join(2_000);
        }

        assertThat(left).as("jobs left waiting while the workers slept (%d taken)", taken.get()).isZero();
        assertThat(taken.get()).isPositive();
    }
}
