package io.driveralias.agent.webconfig;

import java.net.InetAddress;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * Where the password hashes run, and who waits for them. bcrypt is slow on purpose and any pod
 * can send a new guess for free, so the work a client can cause is bounded three ways:
 * <ul>
 * <li>in total: one hash at a time, on a platform thread of its own (at most one core, and never
 * a carrier of the virtual threads that answer the probes), at most {@value #QUEUE} waiting;</li>
 * <li>per address: one check waiting or running at a time (a second gets "busy" at once), and
 * {@value #SHARE_PERCENT} % of one core on average ({@value #BANK_MILLIS} ms of the hasher's CPU banked):
 * alone, a guessing address costs a tenth of a core; many of them share the one hash;</li>
 * <li>per wait: at most {@value #MAX_WAIT_MILLIS} ms, then "busy".</li>
 * </ul>
 * Addresses whose guesses failed within {@value #FAILED_MEMORY_SECONDS} s wait behind the
 * others and fill at most {@value #QUEUE_FOR_FAILED} places: a Prometheus logging in for the
 * first time, or with a new password, is next in line whatever a flood of wrong passwords does.
 */
final class BcryptQueue {

    static final int QUEUE = 32;
    static final int QUEUE_FOR_FAILED = 16;
    static final long MAX_WAIT_MILLIS = 3000;
    static final int SHARE_PERCENT = 10;
    static final long BANK_MILLIS = 1000;
    static final long FAILED_MEMORY_SECONDS = 60;
    /** Addresses remembered; the least recently seen one without a check in flight is forgotten first. */
    static final int CLIENTS = 1024;

    /** What one address has used, and whether it guessed wrong lately. */
    private static final class Client {
        boolean pending;
        long bankNanos = TimeUnit.MILLISECONDS.toNanos(BANK_MILLIS);
        long updated;
        long failedUntil;
        boolean failed;
    }

    private record Turn(InetAddress client, BooleanSupplier hash, CompletableFuture<Boolean> verdict) {
    }

    private final LongSupplier clock;
    /** What a hash cost, read on the hasher's thread before and after it: its CPU time in production. */
    private final LongSupplier cost;
    private final Object lock = new Object();
    private final Map<InetAddress, Client> clients = new LinkedHashMap<>(64, 0.75f, true);
    private final ArrayDeque<Turn> first = new ArrayDeque<>();
    private final ArrayDeque<Turn> failed = new ArrayDeque<>();
    private boolean working;
    private long hashes;

    /**
     * The bank is charged the hasher thread's CPU time, not the wall time of a hash: on a busy
     * node (the hasher runs at the port's lower priority) a hash of 60 ms of CPU can take a second,
     * and charging that would refuse a valid login after two wrong ones.
     */
    BcryptQueue() {
        this(System::nanoTime, BcryptQueue::threadCpuNanos);
    }

    /** {@code clock}: nanoseconds, as {@link System#nanoTime()}, also what a hash costs; tests pass their own. */
    BcryptQueue(LongSupplier clock) {
        this(clock, clock);
    }

    private BcryptQueue(LongSupplier clock, LongSupplier cost) {
        this.clock = clock;
        this.cost = cost;
    }

    private static long threadCpuNanos() {
        java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
        long cpu = threads.isCurrentThreadCpuTimeSupported() ? threads.getCurrentThreadCpuTime() : -1;
        return cpu >= 0 ? cpu : System.nanoTime(); // no CPU clock for threads here: the wall time, as before
    }

    /**
     * Runs {@code hash} in its turn for {@code client} and returns what it returned, or null when
     * the client may not have a turn now (its budget, its check already in flight, a full queue)
     * or waited {@value #MAX_WAIT_MILLIS} ms. An interrupted wait gives up its place.
     */
    Boolean verify(InetAddress client, BooleanSupplier hash) throws InterruptedException {
        Turn turn = enqueue(client, hash);
        if (turn == null) {
            return null;
        }
        try {
            return turn.verdict().get(MAX_WAIT_MILLIS, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            return null;
        } catch (ExecutionException e) {
            return false;
        } finally {
            withdraw(turn); // a no-op once it has run or is running; the result is then remembered by the hash itself
        }
    }

    /** bcrypt runs so far. */
    long hashes() {
        synchronized (lock) {
            return hashes;
        }
    }

    /** Checks waiting, not counting the one running. */
    int waiting() {
        synchronized (lock) {
            return first.size() + failed.size();
        }
    }

    private Turn enqueue(InetAddress address, BooleanSupplier hash) {
        synchronized (lock) {
            long now = clock.getAsLong();
            Client c = client(address, now);
            boolean hasFailed = c.failed && now - c.failedUntil < 0;
            ArrayDeque<Turn> line = hasFailed ? failed : first;
            int room = hasFailed ? QUEUE_FOR_FAILED : QUEUE - QUEUE_FOR_FAILED;
            if (c.pending || c.bankNanos <= 0 || line.size() >= room) {
                return null;
            }
            Turn turn = new Turn(address, hash, new CompletableFuture<>());
            line.add(turn);
            c.pending = true;
            if (!working) {
                working = true;
                Thread.ofPlatform().name("http-bcrypt").daemon().start(this::work);
            }
            return turn;
        }
    }

    private void withdraw(Turn turn) {
        synchronized (lock) {
            if (first.remove(turn) || failed.remove(turn)) {
                clients.get(turn.client()).pending = false;
            }
        }
    }

    /** The hasher: takes turns until none is left, then ends (started again by the next check). */
    private void work() {
        ServingPriority.lowerThisThread();
        boolean emptied = false;
        try {
            for (Turn turn; (turn = next()) != null; ) {
                run(turn);
            }
            emptied = true;
        } finally {
            if (!emptied) {
                synchronized (lock) {
                    working = false; // an Error ended the hasher: the next check starts another
                }
            }
        }
    }

    /** The next turn, those of addresses without recent failures first; null (and the hasher ends) when none is left. */
    private Turn next() {
        synchronized (lock) {
            Turn turn = first.isEmpty() ? failed.poll() : first.poll();
            if (turn == null) {
                working = false;
            } else {
                hashes++;
            }
            return turn;
        }
    }

    private void run(Turn turn) {
        long start = cost.getAsLong();
        boolean verified = false;
        try {
            verified = turn.hash().getAsBoolean();
        } catch (RuntimeException e) {
            verified = false; // a hash the library refuses: nobody gets in with it
        } finally {
            long spent = cost.getAsLong() - start;
            synchronized (lock) {
                long now = clock.getAsLong();
                Client c = clients.get(turn.client());
                c.pending = false;
                c.bankNanos -= spent;
                c.failed = !verified;
                c.failedUntil = now + TimeUnit.SECONDS.toNanos(FAILED_MEMORY_SECONDS);
            }
            turn.verdict().complete(verified);
        }
    }

    /** The address's account, its bank refilled for the time since it was last seen; a newcomer may push out the oldest. */
    private Client client(InetAddress address, long now) {
        Client c = clients.get(address);
        if (c == null) {
            c = new Client();
            c.updated = now;
            clients.put(address, c);
            forgetOldest();
            return c;
        }
        long bank = TimeUnit.MILLISECONDS.toNanos(BANK_MILLIS);
        long earned = (now - c.updated) / 100 * SHARE_PERCENT;
        c.bankNanos = earned >= bank - c.bankNanos ? bank : c.bankNanos + earned;
        c.updated = now;
        return c;
    }

    private void forgetOldest() {
        if (clients.size() <= CLIENTS) {
            return;
        }
        for (Iterator<Client> it = clients.values().iterator(); it.hasNext(); ) {
            Client c = it.next();
            if (!c.pending) {
                it.remove();
                return;
            }
        }
    }
}
