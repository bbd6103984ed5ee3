package io.driveralias.agent.http;

import java.net.InetAddress;
import java.util.HashMap;
import java.util.Map;

/**
 * The kernel threads kept for quiet addresses (see {@link AgentHttpServer}): a few in all, and
 * fewer per address, so that addresses holding a handful of idle connections each cannot take
 * them all from the probes. Only addresses holding a thread are remembered: at most the total.
 */
final class QuietThreads {

    private final int total;
    private final int perClient;
    private final Map<InetAddress, Integer> held = new HashMap<>();
    private int inUse;

    QuietThreads(int total, int perClient) {
        this.total = total;
        this.perClient = perClient;
    }

    /** One thread for {@code peer}, if there is one free for it; {@link #giveBack} it when done. */
    synchronized boolean take(InetAddress peer) {
        int own = held.getOrDefault(peer, 0);
        if (inUse >= total || own >= perClient) {
            return false;
        }
        held.put(peer, own + 1);
        inUse++;
        return true;
    }

    synchronized void giveBack(InetAddress peer) {
        int own = held.getOrDefault(peer, 0);
        if (own <= 1) {
            held.remove(peer);
        } else {
            held.put(peer, own - 1);
        }
        inUse--;
    }
}
