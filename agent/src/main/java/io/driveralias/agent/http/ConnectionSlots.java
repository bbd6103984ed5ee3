package io.driveralias.agent.http;

import java.net.InetAddress;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;

/**
 * How many connections the server holds: at most {@code total}, and at most {@code perClient}
 * from one address, so that one pod holding every connection it can cannot lock the kubelet's
 * probes (from the node's address) out.
 */
final class ConnectionSlots {

    private final Semaphore total;
    private final int perClient;
    private final ConcurrentHashMap<InetAddress, Integer> held = new ConcurrentHashMap<>();

    ConnectionSlots(int total, int perClient) {
        this.total = new Semaphore(total);
        this.perClient = perClient;
    }

    /** A slot for a connection from {@code peer}, or false; each true needs one {@link #release}. */
    boolean tryAcquire(InetAddress peer) {
        boolean[] admitted = {false};
        held.compute(peer, (k, n) -> {
            int count = n == null ? 0 : n;
            if (count >= perClient) {
                return n;
            }
            admitted[0] = true;
            return count + 1;
        });
        if (!admitted[0]) {
            return false;
        }
        if (!total.tryAcquire()) {
            releaseClient(peer);
            return false;
        }
        return true;
    }

    void release(InetAddress peer) {
        releaseClient(peer);
        total.release();
    }

    private void releaseClient(InetAddress peer) {
        held.computeIfPresent(peer, (k, n) -> n <= 1 ? null : n - 1);
    }
}
