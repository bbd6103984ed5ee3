package io.driveralias.agent.live;

import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Work waiting for the repair workers: at most one entry per container, so a burst of
 * events for one container (create, start, a reconcile on top) is one repair. Bounded: when
 * full, new work is refused and the next reconcile finds it again.
 *
 * <p>A started container goes first: without its aliases it is exposed, and its first
 * instruction may be milliseconds away. So that no amount of other work delays it, at most
 * {@code otherLimit} workers at once take anything but a start (creates, reconciles: a storm of
 * a neighbour's creates, each to be described, keeps the others free). Never two workers writing
 * one container: a start never waits for its own create's reading (a description that may queue
 * behind a storm of others), only for its writing. A create reads beside nobody's writes, then
 * {@link #claimWrite claims} the container before it writes; a start that came meanwhile was
 * taken beside it, and the create then leaves the container to it (its description, kept by the
 * runtime, is the start's to reuse). Creates go newest first, then reconciles oldest first:
 * behind a neighbour's storm of creates, the create of a container about to start is served next,
 * and the old ones are as well served by their own starts. A created container waits
 * {@code createDelay} before it may be taken (none by default: see {@code Agent.Tuning}).
 */
final class RepairQueue {

    /** A container of one runtime: ids are the runtime's own, so the runtime is part of the key. */
    record Key(String runtime, String containerId) {
        @Override
        public String toString() {
            return runtime + " " + containerId;
        }
    }

    /**
     * One container to examine; {@code receivedAt} is when the first request for it arrived,
     * {@code pid} its process where an event named it (else 0).
     */
    record Job(Key key, Instant receivedAt, String trigger, int pid) {
        Job(Key key, Instant receivedAt, String trigger) {
            this(key, receivedAt, trigger, 0);
        }

        boolean isStart() {
            return trigger.equals("start");
        }
    }

    private record Entry(Job job, long eligibleNanos) {
    }

    /**
     * The trigger of a start whose create found nothing to write (excluded, no GPU asked): only to
     * be counted, so served as other work is, not ahead of it.
     */
    static final String PLAIN_START = "plain-start";

    /** What became of an offered job. */
    enum Offer { QUEUED, MERGED, FULL, CLOSED }

    private final int capacity;
    private final long createDelayNanos;
    private final int otherLimit;
    private final Map<Key, Entry> pending = new LinkedHashMap<>();
    /** The containers workers hold, and how. */
    private final ContainerHolds holds = new ContainerHolds();
    /** Workers on anything but a start. */
    private int othersInFlight;
    private final ReentrantLock lock = new ReentrantLock();
    /**
     * Idle workers wait here, and each change that may give one of them a job wakes one, not all:
     * the workers are alike, so a job one cannot take no other can either, and a worker that takes
     * a job while more wait wakes the next. When every change woke all eight, the hand-offs were 13 %
     * of the repair threads' profile in the NRI benchmark (docs/benchmark.md).
     */
    private final Condition work = lock.newCondition();
    /** Starts held outside the workers ({@link #hold}) wait here for their container: few, each woken. */
    private final Condition holdable = lock.newCondition();
    private boolean closed;

    RepairQueue(int capacity, Duration createDelay) {
        this(capacity, createDelay, Integer.MAX_VALUE);
    }

    /** {@code otherLimit}: how many workers at once may take anything but a start. */
    RepairQueue(int capacity, Duration createDelay, int otherLimit) {
        this.capacity = capacity;
        this.createDelayNanos = createDelay.toNanos();
        this.otherLimit = Math.max(1, otherLimit);
    }

    /** Queued; merged with the job already waiting for the container; or refused (full, closed). */
    Offer offer(Job job) {
        return offer(job, job.trigger().equals("create") ? createDelayNanos : 0);
    }

    /** As {@link #offer(Job)}, the job taken no sooner than {@code delay} from now (a retry). */
    Offer offerAfter(Job job, Duration delay) {
        return offer(job, delay.toNanos());
    }

    private Offer offer(Job job, long delayNanos) {
        lock.lock();
        try {
            if (closed) {
                return Offer.CLOSED;
            }
            long eligible = System.nanoTime() + delayNanos;
            Entry waiting = pending.get(job.key());
            if (waiting != null) {
                // One job: the first arrival, "start" if either was (it decides the priority), and the process an event named.
                Job old = waiting.job();
                String trigger = job.isStart() ? "start" : old.trigger();
                Instant first = job.receivedAt().isBefore(old.receivedAt()) ? job.receivedAt() : old.receivedAt();
                int pid = job.pid() > 0 ? job.pid() : old.pid();
                pending.put(job.key(), new Entry(new Job(job.key(), first, trigger, pid),
                        Math.min(eligible, waiting.eligibleNanos())));
                work.signal();
                return Offer.MERGED;
            }
            if (pending.size() >= capacity) {
                return Offer.FULL;
            }
            pending.put(job.key(), new Entry(job, eligible));
            work.signal();
            return Offer.QUEUED;
        } finally {
            lock.unlock();
        }
    }

    /**
     * The oldest eligible job for a started container, else (while fewer than {@code otherLimit}
     * workers are on other work) the oldest eligible job, skipping containers held (but for a
     * start beside its create still reading: {@link ContainerHolds}); blocks until there is one;
     * null once closed.
     */
    Job take() throws InterruptedException {
        lock.lock();
        try {
            while (true) {
                if (closed) {
                    return null;
                }
                long now = System.nanoTime();
                Entry chosen = null;
                long nextEligible = Long.MAX_VALUE;
                boolean othersAllowed = othersInFlight < otherLimit;
                Entry newestCreate = null;
                for (Entry e : pending.values()) {
                    Key key = e.job().key();
                    if (e.job().isStart() ? !holds.startMayHold(key) : holds.held(key)) {
                        continue;
                    }
                    if (e.eligibleNanos() > now) {
                        nextEligible = Math.min(nextEligible, e.eligibleNanos());
                        continue;
                    }
                    if (e.job().isStart()) {
                        chosen = e;
                        break;
                    }
                    if (!othersAllowed) {
                        continue;
                    }
                    if (e.job().trigger().equals("create")) {
                        newestCreate = e;
                    } else if (chosen == null) {
                        chosen = e;
                    }
                }
                if (chosen == null || !chosen.job().isStart()) {
                    // Creates newest first: an old create waiting behind a storm of others has likely
                    // been started by now (its start path has it), a new one can still be written early.
                    chosen = newestCreate != null ? newestCreate : chosen;
                }
                if (chosen != null) {
                    Job job = chosen.job();
                    pending.remove(job.key());
                    if (!pending.isEmpty()) {
                        // The next idle worker looks at the rest (or keeps the timer of a create not yet due).
                        work.signal();
                    }
                    if (job.isStart()) {
                        holds.holdStart(job.key());
                    } else {
                        holds.holdOther(job.key(), job.trigger().equals("create"));
                        othersInFlight++;
                    }
                    return job;
                }
                if (nextEligible == Long.MAX_VALUE) {
                    work.await();
                } else {
                    work.awaitNanos(nextEligible - now);
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /** The worker is done with this job: later work for its container may start. */
    void done(Job job) {
        lock.lock();
        try {
            if (job.isStart()) {
                holds.releaseStart(job.key());
            } else {
                othersInFlight--;
                holds.releaseOther(job.key());
            }
            released();
        } finally {
            lock.unlock();
        }
    }

    /**
     * A create that has read its container, before it writes: true when the container is now
     * its alone; false when its start was taken meanwhile, which then does all the writing.
     */
    boolean claimWrite(Job create) {
        lock.lock();
        try {
            return holds.claimWrite(create.key());
        } finally {
            lock.unlock();
        }
    }

    /**
     * Holds a container for a start examined outside the workers (inside the runtime's own start,
     * NRI): waits while a worker holds it (but for a create still reading), at most until
     * {@code deadlineNanos} ({@link System#nanoTime()}).
     * True when held: {@link #release} it. Work waiting for it stays queued and runs after.
     */
    boolean hold(Key key, long deadlineNanos) throws InterruptedException {
        lock.lock();
        try {
            while (!holds.startMayHold(key)) {
                long left = deadlineNanos - System.nanoTime();
                if (left <= 0 || closed) {
                    return false;
                }
                holdable.awaitNanos(left);
            }
            holds.holdStart(key);
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** The end of a {@link #hold}. */
    void release(Key key) {
        lock.lock();
        try {
            holds.releaseStart(key);
            released();
        } finally {
            lock.unlock();
        }
    }

    /** A container was let go: work waiting for it may be taken, and a start waiting to hold it may. Under the lock. */
    private void released() {
        work.signal();
        holdable.signalAll();
    }

    /** Whether a worker holds a container now. */
    boolean busy() {
        lock.lock();
        try {
            return holds.any();
        } finally {
            lock.unlock();
        }
    }

    int size() {
        lock.lock();
        try {
            return pending.size();
        } finally {
            lock.unlock();
        }
    }

    /** Workers stop taking work; what is still pending is left to the next agent's reconcile. */
    void close() {
        lock.lock();
        try {
            closed = true;
            work.signalAll();
            holdable.signalAll();
        } finally {
            lock.unlock();
        }
    }
}
