package io.driveralias.agent.http;

import java.net.InetAddress;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.OptionalLong;
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
 * bounds what it makes the agent compute (16 addresses: 64 handshakes a second, about a quarter
 * of a core). The kubelet's probes and Prometheus' scrapes, a handshake every few seconds from
 * an address of their own, never wait behind another address. The accounts outlive the
 * connections (an address that closes everything and comes back finds its own), at most
 * {@value #CLIENTS} addresses, the least recently seen idle one forgotten first.
 */
final class HandshakeTurns {

    static final int IN_PROGRESS = 2;
    static final int PER_SECOND = 4;
    static final int BURST = 8;
    static final int CLIENTS = 1024;
    private static final long INTERVAL = TimeUnit.SECONDS.toNanos(1) / PER_SECOND;

    /** One address: its handshakes in progress, and the earliest time its next may start (a virtual schedule). */
    private static final class Client {
        final Semaphore inProgress = new Semaphore(IN_PROGRESS);
        long next;
    }

    /** A turn taken; {@link #end} it when the handshake is over. */
    static final class Turn {
        private final Semaphore held;

        private Turn(Semaphore held) {
            this.held = held;
        }

        void end() {
            held.release();
        }
    }

    private final LongSupplier clock;
    private final Map<InetAddress, Client> clients = new LinkedHashMap<>(64, 0.75f, true);

    HandshakeTurns() {
        this(System::nanoTime);
    }

    HandshakeTurns(LongSupplier clock) {
        this.clock = clock;
    }

    /**
     * A turn for {@code address}, waiting for it until {@code deadline} (a {@link System#nanoTime()}
     * value), or null if none comes by then. Interrupted, it gives up the turn.
     */
    Turn await(InetAddress address, long deadline) throws InterruptedException {
        Client c = client(address);
        long left = deadline - clock.getAsLong();
        if (left <= 0 || !c.inProgress.tryAcquire(left, TimeUnit.NANOSECONDS)) {
            return null;
        }
        boolean taken = false;
        try {
            OptionalLong start = reserve(c, deadline);
            if (start.isEmpty()) {
                return null;
            }
            long wait = start.getAsLong() - clock.getAsLong();
            if (wait > 0) {
                TimeUnit.NANOSECONDS.sleep(wait);
            }
            taken = true;
            return new Turn(c.inProgress);
        } finally {
            if (!taken) {
                c.inProgress.release();
            }
        }
    }

    /**
     * When this handshake may start, the schedule moved on by one; empty, and the schedule left
     * as it was, if that is past {@code deadline}. A quiet address may start {@value #BURST} at once.
     */
    private synchronized OptionalLong reserve(Client c, long deadline) {
        long now = clock.getAsLong();
        long earliest = now - (BURST - 1) * INTERVAL;
        if (c.next - earliest < 0) {
            c.next = earliest;
        }
        long start = c.next - now > 0 ? c.next : now;
        if (start - deadline > 0) {
            return OptionalLong.empty();
        }
        c.next += INTERVAL;
        return OptionalLong.of(start);
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
