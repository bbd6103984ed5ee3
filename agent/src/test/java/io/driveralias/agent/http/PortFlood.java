package io.driveralias.agent.http;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongConsumer;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509ExtendedTrustManager;

/**
 * A hostile client of the metrics port, as cheap to run as it can be on a 2-core machine: one
 * virtual thread per connection, from 127.0.0.1, 127.0.0.2, ... (the whole of 127/8 is loopback
 * on Linux, so each is an address of its own to the server). Each connection loops: connect,
 * then what its {@link Kind} says, read whatever comes back, close, again, until it is stopped.
 * It does not verify the server's certificate (an attacker would not bother), and never resumes
 * a TLS session (that would spare the server the public-key work).
 *
 * <p>{@link #launch} runs it in a JVM of its own, as an attacker is a process of its own: in the
 * server's JVM its virtual threads would share the carriers that serve the probes, which no pod
 * can do to the agent. At nice 10, the nice of the agent's serving threads: in a cluster the
 * attacker is a pod in a cgroup of its own, where the nice of the agent's threads does not count
 * against it; on a test machine without those cgroups, the same nice gives the port and the
 * attacker the same weight, as two pods of equal shares would have, and the agent's repairs
 * (nice 0) the same advantage over both as over the port in its own pod. Used by the unit tests
 * of the server and by the IT of the packaged agent.
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

    /** A flood running in a JVM of its own; {@link #close} stops it and reads what happened. */
    public static final class Launched implements AutoCloseable {
        private final Process process;
        private String outcomes = "";

        private Launched(Process process) {
            this.process = process;
        }

        /** After {@link #close}: how the connections ended, e.g. {@code {401=10, 429=4000, eof=900}}. */
        public String outcomes() {
            return outcomes;
        }

        @Override
        public void close() throws IOException, InterruptedException {
            if (process.isAlive()) {
                process.getOutputStream().close(); // end of its stdin: stop
            }
            byte[] out = process.getInputStream().readAllBytes();
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
            String text = new String(out, StandardCharsets.UTF_8).trim();
            outcomes = text.isEmpty() ? "(nothing reported, exit " + process.exitValue() + ")" : text.lines().reduce((a, b) -> b).get();
        }
    }

    /**
     * Starts {@code addresses} x {@code perAddress} looping connections to {@code port} on
     * 127.0.0.1, in a JVM of its own (this one's class path); returns once they are under way.
     */
    public static Launched launch(int port, Kind kind, int addresses, int perAddress) throws IOException {
        return launch(port, kind, addresses, perAddress, pid -> { });
    }

    /** As above; {@code started} gets the flood's pid before it floods (to place it in a cgroup of its own). */
    public static Launched launch(int port, Kind kind, int addresses, int perAddress, LongConsumer started)
            throws IOException {
        List<String> command = List.of("nice", "-n", "10", Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-XX:+UseSerialGC", "-Xmx256m", "-cp", System.getProperty("java.class.path"), PortFlood.class.getName(),
                String.valueOf(port), kind.name(), String.valueOf(addresses), String.valueOf(perAddress));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        started.accept(process.pid());
        Launched launched = new Launched(process);
        byte[] ready = process.getInputStream().readNBytes(STARTED.length() + 1);
        if (!new String(ready, StandardCharsets.UTF_8).startsWith(STARTED)) {
            process.destroyForcibly();
            throw new IOException("the flood did not start: " + new String(ready, StandardCharsets.UTF_8)
                    + new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
        }
        return launched;
    }

    /** The flood's own JVM: floods until its stdin ends, then prints how the connections ended. */
    public static void main(String[] args) throws Exception {
        Kind kind = Kind.valueOf(args[1]);
        PortFlood flood = start(Integer.parseInt(args[0]), kind, kind == Kind.WRONG_PASSWORDS ? null : trustingAnyServer(),
                Integer.parseInt(args[2]), Integer.parseInt(args[3]));
        Thread.sleep(1000); // every connection under way
        System.out.println(STARTED);
        System.out.flush();
        System.in.transferTo(OutputStream.nullOutputStream());
        flood.close();
        System.out.println(flood.outcomes());
    }

    /** Starts the flood in this JVM; {@code tls} for the TLS kinds, else null. */
    static PortFlood start(int port, Kind kind, SSLContext tls, int addresses, int perAddress) {
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

    private static final String STARTED = "flooding";

    /** How the connections ended so far: the status code answered ("401", "429"), or what else happened ("reset", "eof"). */
    Map<String, Long> outcomes() {
        Map<String, Long> copy = new TreeMap<>();
        outcomes.forEach((k, v) -> copy.put(k, v.sum()));
        return copy;
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

    private static SSLContext trustingAnyServer() throws GeneralSecurityException {
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, new TrustManager[] {new AnyServer()}, null);
        return context;
    }

    /** An attacker does not care whom it talks to. */
    private static final class AnyServer extends X509ExtendedTrustManager {
        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket) {
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket) {
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine) {
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine) {
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType) {
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType) {
        }

        @Override
        public X509Certificate[] getAcceptedIssuers() {
            return new X509Certificate[0];
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
