package io.driveralias.agent.http;

import java.net.InetAddress;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * How many new connections an address may have served a second: {@value #PER_SECOND}, or
 * {@value #BURST} at once after a quiet spell; past that, the connection is closed as it is
 * accepted, before it costs a thread. A client that loops on connect, send, close gets an answer
 * in microseconds (a 401 or a 429) and comes straight back: 16 such addresses made the agent
 * serve 5,000 connections a second and took both cores from the repairs. The kubelet's probes
 * and Prometheus' scrapes open a few connections a second at the most. The accounts outlive the
 * connections, at most {@value #CLIENTS} addresses, the least recently seen forgotten first.
 */
final class ConnectionRate {

    static final int PER_SECOND = 32;
    /** As many as one address may hold ({@link AgentHttpServer.Limits#DEFAULT}'s maxPerClient). */
    static final int BURST = 64;
    static final int CLIENTS = 1024;
    private static final long INTERVAL = TimeUnit.SECONDS.toNanos(1) / PER_SECOND;

    private final LongSupplier clock;
    /** Per address, when its next connection is due (a virtual schedule: up to {@link #BURST} of them may be early). */
    private final Map<InetAddress, long[]> next = new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<InetAddress, long[]> eldest) {
            return size() > CLIENTS;
        }
    };

    ConnectionRate() {
        this(System::nanoTime);
    }

    ConnectionRate(LongSupplier clock) {
        this.clock = clock;
    }

    /** Whether {@code address} may have one more connection served now; if so, it is counted. */
    synchronized boolean admit(InetAddress address) {
        long now = clock.getAsLong();
        long[] due = next.computeIfAbsent(address, a -> new long[] {now - BURST * INTERVAL});
        long earliest = now - (BURST - 1) * INTERVAL;
        if (due[0] - earliest < 0) {
            due[0] = earliest;
        }
        if (due[0] - now > 0) {
            return false;
        }
        due[0] += INTERVAL;
        return true;
    }
}
