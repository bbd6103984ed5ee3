package io.driveralias.agent.http;

import java.net.InetAddress;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * When a connection may have its TLS handshake. The server's side of a handshake is a few
 * milliseconds of public-key work (3.7 ms of CPU measured with the shipped JVM options) that a
 * client gets for the price of a replayed ClientHello, and a virtual thread computing is not
 * preempted. So each address has at most {@value #IN_PROGRESS} handshakes in progress, and
 * starts at most {@value #PER_SECOND} a second ({@value #BURST} at once after a quiet spell):
 * a flood that is evicted as fast as it reconnects frees its turns at once, and only the rate
 * bounds what it makes the agent compute. The handshakes of addresses that hold many connections
 * (the caller says which: a flood's, never the kubelet's probes or a Prometheus, which hold one
 * or two) are busy, and share {@value #BUSY_IN_PROGRESS} handshakes in progress and
 * {@value #BUSY_PER_SECOND} a second among them all (about 60 ms of CPU a second, however many
 * addresses flood), so that the probes, from addresses of their own, never wait for a busy turn
 * and find at most {@value #BUSY_IN_PROGRESS} busy handshakes ahead of theirs. Busy is what an
 * address holds, not how often it handshakes: a probe run back to back (ten in a second, a new
 * connection each) once counted as busy by its rate and queued for 5 s behind stalled handshakes
 * of a flood holding every busy turn. The accounts outlive the connections (an address that
 * closes everything and comes back finds its own), at most {@value #CLIENTS} addresses, the least
 * recently seen idle one forgotten first.
 */
final class HandshakeTurns {

    static final int IN_PROGRESS = 2;
    static final int PER_SECOND = 4;
    static final int BURST = 8;
    static final int CLIENTS = 1024;
    /**
     * Handshakes in progress of all busy addresses together (those that handshake more than a
     * few times a second): the work a probe's handshake may find ahead of it on the two carriers
     * is at most this many, however many addresses flood.
     */
    static final int BUSY_IN_PROGRESS = 4;
    /** Handshakes a second of all busy addresses together: at most about 60 ms of CPU a second, however many addresses flood. */
    static final int BUSY_PER_SECOND = 16;
    private static final long BUSY_INTERVAL = TimeUnit.SECONDS.toNanos(1) / BUSY_PER_SECOND;
    private static final long INTERVAL = TimeUnit.SECONDS.toNanos(1) / PER_SECOND;

    /** One address: its handshakes in progress, and the earliest time its next may start (a virtual schedule). */
    private static final class Client {
        final Semaphore inProgress = new Semaphore(IN_PROGRESS);
        long next;
    }

    /** A turn taken; {@link #end} it when the handshake is over. */
    static final class Turn {
        private final Semaphore address;
        private final Semaphore busy;

        private Turn(Semaphore address, Semaphore busy) {
            this.address = address;
            this.busy = busy;
        }

        void end() {
            if (busy != null) {
                busy.release();
            }
            address.release();
        }
    }

    private final LongSupplier clock;
    /** Fair: the busy addresses take these turns in the order they asked. */
    private final Semaphore busy = new Semaphore(BUSY_IN_PROGRESS, true);
    /** When the busy addresses' next handshake may start. */
    private long busyNext;
    private final Map<InetAddress, Client> clients = new LinkedHashMap<>(64, 0.75f, true);

    HandshakeTurns() {
        this(System::nanoTime);
    }

    HandshakeTurns(LongSupplier clock) {
        this.clock = clock;
    }

    /**
     * A turn for {@code address}, waiting for it until {@code deadline} (a {@link System#nanoTime()}
     * value), or null if none comes by then; {@code busy}: the address holds many connections, and
     * the turn is one of the busy addresses' few. Interrupted, it gives up the turn.
     */
    Turn await(InetAddress address, boolean busy, long deadline) throws InterruptedException {
        Client c = client(address);
        long left = deadline - clock.getAsLong();
        if (left <= 0 || !c.inProgress.tryAcquire(left, TimeUnit.NANOSECONDS)) {
            return null;
        }
        boolean taken = false;
        try {
            Long start = reserve(c, deadline);
            if (start == null) {
                return null;
            }
            long wait = start - clock.getAsLong();
            if (wait > 0) {
                TimeUnit.NANOSECONDS.sleep(wait);
            }
            if (busy && !busyTurn(deadline)) {
                return null;
            }
            taken = true;
            return new Turn(c.inProgress, busy ? this.busy : null);
        } finally {
            if (!taken) {
                c.inProgress.release();
            }
        }
    }

    /** One of the busy addresses' turns, at their common rate, by {@code deadline}; false if none. */
    private boolean busyTurn(long deadline) throws InterruptedException {
        if (!busy.tryAcquire(deadline - clock.getAsLong(), TimeUnit.NANOSECONDS)) {
            return false;
        }
        long at;
        synchronized (this) {
            long now = clock.getAsLong();
            if (busyNext - now < 0) {
                busyNext = now;
            }
            at = busyNext;
            if (at - deadline > 0) {
                busy.release();
                return false;
            }
            busyNext += BUSY_INTERVAL;
        }
        long wait = at - clock.getAsLong();
        try {
            if (wait > 0) {
                TimeUnit.NANOSECONDS.sleep(wait);
            }
            return true;
        } catch (InterruptedException e) {
            busy.release();
            throw e;
        }
    }

    /**
     * When this handshake may start, the schedule moved on by one; null, and the schedule left as
     * it was, if that is past {@code deadline}. An address idle for a while may start {@value #BURST} at once.
     */
    private synchronized Long reserve(Client c, long deadline) {
        long now = clock.getAsLong();
        long earliest = now - (BURST - 1) * INTERVAL;
        if (c.next - earliest < 0) {
            c.next = earliest;
        }
        long start = c.next - now > 0 ? c.next : now;
        if (start - deadline > 0) {
            return null;
        }
        c.next += INTERVAL;
        return start;
    }

    private synchronized Client client(InetAddress address) {
        Client c = clients.get(address);
        if (c == null) {
            c = new Client();
            c.next = clock.getAsLong() - BURST * INTERVAL;
            clients.put(address, c);
            if (clients.size() > CLIENTS) {
                forgetOneIdle();
            }
        }
        return c;
    }

    private void forgetOneIdle() {
        for (Iterator<Client> it = clients.values().iterator(); it.hasNext(); ) {
            if (it.next().inProgress.availablePermits() == IN_PROGRESS) {
                it.remove();
                return;
            }
        }
    }
}
