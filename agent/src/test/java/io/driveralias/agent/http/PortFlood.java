package io.driveralias.agent.http;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLSocket;

/**
 * A hostile client of the metrics port, as cheap to run as it can be on a 2-core machine: one
 * virtual thread per connection, from 127.0.0.1, 127.0.0.2, ... (the whole of 127/8 is loopback
 * on Linux, so each is an address of its own to the server). Each connection loops: connect,
 * then what its {@link Kind} says, read whatever comes back, close, again, until {@link #close}.
 * Used by the unit tests of the server and by the IT of the packaged agent.
 */
public final class PortFlood implements AutoCloseable {

    /** What each connection does once connected. */
    public enum Kind {
        /** GET /metrics with a random password, over plain HTTP. */
        WRONG_PASSWORDS,
        /** A full TLS handshake (never resumed), then GET /metrics with a random password. */
        TLS_WRONG_PASSWORDS,
        /** A ClientHello, then nothing: the handshake never finishes; reads until the server lets go. */
        TLS_STALLED_HANDSHAKES
    }

    private final InetSocketAddress server;
    private final Kind kind;
    private final SSLContext tls;
    private final byte[] clientHello;
    private final AtomicBoolean stop = new AtomicBoolean();
    private final List<Thread> threads = new ArrayList<>();
    private final Set<Closeable> open = ConcurrentHashMap.newKeySet();
    private final Map<String, LongAdder> outcomes = new ConcurrentHashMap<>();

    /**
     * Starts {@code addresses} x {@code perAddress} looping connections to {@code port} on
     * 127.0.0.1; {@code tls} (trusting the server) for the TLS kinds, else null.
     */
    public static PortFlood start(int port, Kind kind, SSLContext tls, int addresses, int perAddress) {
        PortFlood flood = new PortFlood(port, kind, tls);
        for (int a = 1; a <= addresses; a++) {
            String from = "127.0.0." + a;
            for (int i = 0; i < perAddress; i++) {
                flood.threads.add(Thread.ofVirtual().name("flood-" + from).start(() -> flood.loop(from)));
            }
        }
        return flood;
    }

    private PortFlood(int port, Kind kind, SSLContext tls) {
        this.server = new InetSocketAddress(InetAddress.getLoopbackAddress(), port);
        this.kind = kind;
        this.tls = tls;
        this.clientHello = kind == Kind.TLS_STALLED_HANDSHAKES ? clientHello(tls, port) : null;
    }

    /** How the connections ended so far: the status code answered ("401", "429"), or what else happened ("reset", "eof"). */
    public Map<String, Long> outcomes() {
        Map<String, Long> copy = new TreeMap<>();
        outcomes.forEach((k, v) -> copy.put(k, v.sum()));
        return copy;
    }

    /** Connections made so far. */
    public long connections() {
        return outcomes().values().stream().mapToLong(Long::longValue).sum();
    }

    @Override
    public void close() throws InterruptedException {
        stop.set(true);
        open.forEach(PortFlood::closeQuietly);
        for (Thread t : threads) {
            t.join(10_000);
        }
    }

    private void loop(String from) {
        while (!stop.get()) {
            String outcome;
            try {
                outcome = once(from);
            } catch (SSLException e) {
                outcome = "tls-error";
            } catch (IOException e) {
                outcome = e.getMessage() != null && e.getMessage().contains("reset") ? "reset" : "io-error";
            }
            outcomes.computeIfAbsent(outcome, k -> new LongAdder()).increment();
        }
    }

    private String once(String from) throws IOException {
        Socket raw = new Socket();
        open.add(raw);
        try (raw) {
            raw.bind(new InetSocketAddress(from, 0));
            raw.connect(server, 5000);
            raw.setSoTimeout(30_000);
            if (stop.get()) {
                return "stopped";
            }
            return switch (kind) {
                case WRONG_PASSWORDS -> wrongPassword(raw);
                case TLS_WRONG_PASSWORDS -> {
                    SSLSocket ssl = (SSLSocket) tls.getSocketFactory().createSocket(raw, "127.0.0.1", server.getPort(), true);
                    try {
                        ssl.startHandshake();
                        yield wrongPassword(ssl);
                    } finally {
                        ssl.getSession().invalidate(); // the next handshake is a full one, as an attacker would make it
                    }
                }
                case TLS_STALLED_HANDSHAKES -> {
                    raw.getOutputStream().write(clientHello);
                    drain(raw.getInputStream());
                    yield "let-go";
                }
            };
        } finally {
            open.remove(raw);
        }
    }

    private static String wrongPassword(Socket socket) throws IOException {
        String password = Long.toHexString(ThreadLocalRandom.current().nextLong());
        String credentials = Base64.getEncoder().encodeToString(("prometheus:" + password).getBytes(StandardCharsets.UTF_8));
        socket.getOutputStream().write(("GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Basic " + credentials + "\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        byte[] head = new byte[12];
        int n = socket.getInputStream().readNBytes(head, 0, head.length);
        if (n < head.length) {
            return "eof";
        }
        drain(socket.getInputStream());
        return new String(head, 9, 3, StandardCharsets.US_ASCII);
    }

    private static void drain(InputStream in) throws IOException {
        byte[] sink = new byte[4096];
        while (in.read(sink) >= 0) {
            // until the server closes
        }
    }

    /** The first flight of a TLS client: what a stalled handshake sends before it stops. */
    private static byte[] clientHello(SSLContext tls, int port) {
        try {
            SSLEngine engine = tls.createSSLEngine("127.0.0.1", port);
            engine.setUseClientMode(true);
            ByteBuffer hello = ByteBuffer.allocate(engine.getSession().getPacketBufferSize());
            engine.wrap(ByteBuffer.allocate(0), hello);
            return Arrays.copyOf(hello.array(), hello.position());
        } catch (SSLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void closeQuietly(Closeable c) {
        try {
            c.close();
        } catch (IOException ignored) {
            // ending the flood
        }
    }
}
