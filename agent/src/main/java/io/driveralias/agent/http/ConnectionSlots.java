package io.driveralias.agent.http;

import java.io.Closeable;
import java.io.IOException;
import java.net.InetAddress;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.Map;

/**
 * Which connections the server holds, and which one goes when a new one needs its place.
 *
 * <p>At most {@code total} connections, at most {@code perClient} from one address. A full
 * server does not refuse the newcomer: it evicts a connection that is costing a slot without
 * being served: one that has not sent a complete request head yet (idle, a slowloris, a TLS
 * handshake under way or waiting for its turn), one whose credentials are being checked or wait
 * for their turn of bcrypt, or one whose answer is already written. At the address's own cap
 * the victim is that address's oldest such connection; at the total cap it is the oldest of the
 * address holding the most. A probe cannot be told from an attacker before its head arrives, so
 * a reserve of slots would fill just the same; eviction means the newest connection always gets
 * in, and a kubelet probe sends its head in the same instant it connects. Once its head is
 * complete and its credentials, where asked, are checked, the connection is being answered and
 * is never evicted; what can be held that way is bounded: probes and errors answer at once
 * (a write of a few hundred bytes), and scrapes (which a slow reader can stretch to the exchange
 * deadline) are at most {@value #SCRAPES_PER_CLIENT} per address and {@value #SCRAPES} in all,
 * far fewer than {@code total}, so there is always a connection to evict. Evicting closes the
 * {@link Connection}, which also ends its wait for a turn.
 */
final class ConnectionSlots {

    /** Prometheus scrapes one target once per job; an HA pair scrapes from two addresses. */
    static final int SCRAPES_PER_CLIENT = 4;
    static final int SCRAPES = 64;

    private enum State { WAITING, ANSWERING, SCRAPING, ANSWERED, GONE }

    /** One admitted connection; {@link #release} it when its thread ends. */
    static final class Slot {
        private final InetAddress peer;
        private final Closeable connection;
        private State state = State.WAITING;

        private Slot(InetAddress peer, Closeable connection) {
            this.peer = peer;
            this.connection = connection;
        }
    }

    /** What one address holds: a count, and its evictable connections, oldest first. */
    private static final class Peer {
        int held;
        int scrapes;
        final LinkedHashSet<Slot> evictable = new LinkedHashSet<>();
    }

    private final int total;
    private final int perClient;
    private final Map<InetAddress, Peer> peers = new HashMap<>();
    private int held;
    private int scrapes;

    ConnectionSlots(int total, int perClient) {
        this.total = total;
        this.perClient = perClient;
    }

    /**
     * A slot for {@code connection} from {@code peer}, or null when every slot it could take is
     * being answered. A connection evicted to make room is closed here.
     */
    Slot admit(InetAddress peer, Closeable connection) {
        Slot victim;
        Slot admitted;
        synchronized (this) {
            Peer own = peers.get(peer);
            if (own != null && own.held >= perClient) {
                victim = oldest(own);
            } else if (held >= total) {
                victim = oldestOfTheHeaviest();
            } else {
                victim = null;
            }
            if (victim == null && (held >= total || own != null && own.held >= perClient)) {
                return null;
            }
            if (victim != null) {
                remove(victim);
            }
            admitted = new Slot(peer, connection);
            Peer p = peers.computeIfAbsent(peer, k -> new Peer());
            p.held++;
            p.evictable.add(admitted);
            held++;
        }
        if (victim != null) {
            closeQuietly(victim.connection);
        }
        return admitted;
    }

    /**
     * The request head arrived and its credentials, where asked, are checked: from now on the
     * connection is never evicted. False if it already was.
     */
    synchronized boolean answering(Slot slot) {
        if (slot.state != State.WAITING) {
            return false;
        }
        slot.state = State.ANSWERING;
        peers.get(slot.peer).evictable.remove(slot);
        return true;
    }

    /** An answering connection becomes a scrape, if its address and the server have room for one. */
    synchronized boolean scraping(Slot slot) {
        Peer p = peers.get(slot.peer);
        if (slot.state != State.ANSWERING || p.scrapes >= SCRAPES_PER_CLIENT || scrapes >= SCRAPES) {
            return false;
        }
        slot.state = State.SCRAPING;
        p.scrapes++;
        scrapes++;
        return true;
    }

    /** The answer is written: what is left (waiting for the client to close) may be evicted. */
    synchronized void answered(Slot slot) {
        if (slot.state == State.GONE || slot.state == State.ANSWERED) {
            return;
        }
        endScrape(slot);
        slot.state = State.ANSWERED;
        peers.get(slot.peer).evictable.add(slot);
    }

    /** The connection ended; a no-op for one already evicted. */
    synchronized void release(Slot slot) {
        if (slot.state != State.GONE) {
            remove(slot);
        }
    }

    /** Connections {@code peer} holds now. */
    synchronized int heldBy(InetAddress peer) {
        Peer p = peers.get(peer);
        return p == null ? 0 : p.held;
    }

    /** Connections holding a slot now; an evicted one no longer does, though its thread may still be ending. */
    synchronized int held() {
        return held;
    }

    private void remove(Slot slot) {
        endScrape(slot);
        Peer p = peers.get(slot.peer);
        p.evictable.remove(slot);
        slot.state = State.GONE;
        held--;
        if (--p.held == 0) {
            peers.remove(slot.peer);
        }
    }

    private void endScrape(Slot slot) {
        if (slot.state == State.SCRAPING) {
            peers.get(slot.peer).scrapes--;
            scrapes--;
        }
    }

    private static Slot oldest(Peer p) {
        Iterator<Slot> it = p.evictable.iterator();
        return it.hasNext() ? it.next() : null;
    }

    /** The address holding the most connections with one to spare; at most one pass over the addresses. */
    private Slot oldestOfTheHeaviest() {
        Peer heaviest = null;
        for (Peer p : peers.values()) {
            if (!p.evictable.isEmpty() && (heaviest == null || p.held > heaviest.held)) {
                heaviest = p;
            }
        }
        return heaviest == null ? null : oldest(heaviest);
    }

    private static void closeQuietly(Closeable c) {
        try {
            c.close();
        } catch (IOException ignored) {
            // already closed
        }
    }
}
