package io.driveralias.agent.http;

import io.driveralias.agent.metrics.PrometheusScrape;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code /metrics}, {@code /healthz} and {@code /readyz}: a small HTTP/1.1 server that a
 * hostile client cannot hold hostage. The port is reachable from any pod, and a liveness probe
 * that hangs gets the agent restarted, so every connection is bounded: one virtual thread each
 * (an idle or slow client costs a parked virtual thread, never a pool slot), at most
 * {@link Limits#maxConnections} at once and {@link Limits#maxPerClient} from one address, where a
 * newcomer evicts a connection that has not sent its request yet rather than be refused (see
 * {@link ConnectionSlots}: however many addresses hold idle connections, a probe gets in), the
 * request head must arrive complete within {@link Limits#headerDeadline} and fit
 * {@link Limits#maxHeaderBytes}, and the whole exchange, a slow reader of a large scrape
 * included, is cut at {@link Limits#exchangeDeadline}. One request per connection
 * ({@code Connection: close}). The JDK's com.sun.net.httpserver was dropped: its timeouts are
 * JVM-wide system properties read once, and its default has none.
 */
public final class AgentHttpServer implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(AgentHttpServer.class);
    private static final String TEXT = "text/plain; charset=utf-8";
    private static final int BACKLOG = 128;
    /** Scrapes render the whole registry; a burst of them must not take every CPU. */
    private static final int CONCURRENT_RENDERS = 2;
    /** A probe's or a scrape's head is a few hundred bytes; the buffer grows to the cap only for more. */
    private static final int FIRST_READ = 1024;

    /** The bounds on what one client may cost. */
    public record Limits(int maxConnections, Duration headerDeadline, Duration exchangeDeadline, int maxHeaderBytes,
                         int maxPerClient) {
        /**
         * A probe or scrape sends a few hundred bytes at once; Prometheus' scrape timeout is 10 s
         * by default. One address may hold an eighth of the connections: a single hostile pod
         * evicts only its own, and the kubelet's probes (from the node's address) get in.
         */
        public static final Limits DEFAULT = new Limits(512, Duration.ofSeconds(10), Duration.ofSeconds(30), 8192, 64);

        public Limits(int maxConnections, Duration headerDeadline, Duration exchangeDeadline, int maxHeaderBytes) {
            this(maxConnections, headerDeadline, exchangeDeadline, maxHeaderBytes, maxConnections);
        }
    }

    private final ServerSocket listener;
    private final MetricsSource metrics;
    private final AgentStatus status;
    private final Limits limits;
    private final ConnectionSlots slots;
    private final Semaphore renders = new Semaphore(CONCURRENT_RENDERS);
    private final Set<Socket> open = ConcurrentHashMap.newKeySet();
    private final ScheduledThreadPoolExecutor deadlines;

    /**
     * Binds {@code address} at once (port 0 picks a free port, see {@link #port()}); requests
     * are answered after {@link #start()}.
     */
    public AgentHttpServer(InetSocketAddress address, MetricsSource metrics, AgentStatus status) throws IOException {
        this(address, metrics, status, Limits.DEFAULT);
    }

    AgentHttpServer(InetSocketAddress address, MetricsSource metrics, AgentStatus status, Limits limits) throws IOException {
        this.metrics = metrics;
        this.status = status;
        this.limits = limits;
        this.slots = new ConnectionSlots(limits.maxConnections(), limits.maxPerClient());
        this.listener = new ServerSocket();
        try {
            listener.setReuseAddress(true);
            listener.bind(address, BACKLOG);
        } catch (IOException e) {
            listener.close();
            throw e;
        }
        deadlines = new ScheduledThreadPoolExecutor(1, Thread.ofPlatform().name("http-deadlines").daemon().factory());
        deadlines.setRemoveOnCancelPolicy(true);
    }

    public void start() {
        Thread.ofPlatform().name("http-accept").daemon().start(this::acceptLoop);
        log.info("listening on {} for /metrics, /healthz and /readyz", listener.getLocalSocketAddress());
    }

    /** The bound port: the one asked for, or the one the system chose for port 0. */
    public int port() {
        return listener.getLocalPort();
    }

    /** Connections being served now (for tests and for the curious). */
    int openConnections() {
        return open.size();
    }

    /** Stops accepting and closes every connection; requests in flight end with it. */
    @Override
    public void close() {
        closeQuietly(listener);
        open.forEach(AgentHttpServer::closeQuietly);
        deadlines.shutdownNow(); // the acceptor ends as its accept() fails on the closed socket
    }

    private void acceptLoop() {
        while (!listener.isClosed()) {
            Socket socket;
            try {
                socket = listener.accept();
            } catch (IOException e) {
                if (!listener.isClosed()) {
                    log.warn("accept failed: {}", e.toString());
                    pause(); // e.g. out of file descriptors: do not spin
                }
                continue;
            }
            ConnectionSlots.Slot slot = slots.admit(socket.getInetAddress(), socket);
            if (slot == null) {
                // Every slot it could take is being answered: those end within the exchange deadline.
                closeQuietly(socket);
                continue;
            }
            open.add(socket);
            Thread.ofVirtual().name("http-conn").start(() -> serve(socket, slot));
        }
    }

    private void serve(Socket socket, ConnectionSlots.Slot slot) {
        ScheduledFuture<?> cut = null;
        try (socket) {
            cut = deadlines.schedule(() -> closeQuietly(socket), limits.exchangeDeadline().toMillis(), TimeUnit.MILLISECONDS);
            byte[] head = readHead(socket);
            if (head == null || !slots.answering(slot)) {
                return; // closed, timed out, oversized or evicted: nothing worth answering
            }
            respond(socket, slot, head);
            slots.answered(slot);
            linger(socket);
        } catch (IOException | RuntimeException e) {
            log.debug("connection from {} ended: {}", socket.getRemoteSocketAddress(), e.toString());
        } finally {
            if (cut != null) {
                cut.cancel(false);
            }
            open.remove(socket);
            slots.release(slot);
        }
    }

    /**
     * The request line and headers, or null; reads stop at the deadline and the size cap. Each
     * read is scanned once, so a client dribbling bytes costs no more than one sending them at
     * once, and the buffer grows with what arrived: an idle connection holds a small one.
     */
    private byte[] readHead(Socket socket) throws IOException {
        long deadline = System.nanoTime() + limits.headerDeadline().toNanos();
        InputStream in = socket.getInputStream();
        byte[] head = new byte[Math.min(FIRST_READ, limits.maxHeaderBytes())];
        int length = 0;
        while (length < limits.maxHeaderBytes()) {
            if (length == head.length) {
                head = Arrays.copyOf(head, Math.min(2 * head.length, limits.maxHeaderBytes()));
            }
            long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (left <= 0) {
                return null;
            }
            socket.setSoTimeout((int) Math.min(left, Integer.MAX_VALUE));
            int n;
            try {
                n = in.read(head, length, head.length - length);
            } catch (SocketTimeoutException e) {
                return null;
            }
            if (n < 0) {
                return null;
            }
            int from = Math.max(0, length - 3);
            length += n;
            int end = endOfHead(head, from, length);
            if (end >= 0) {
                return Arrays.copyOf(head, end + 2);
            }
        }
        send(socket, "GET", 431, TEXT, text("request header too large"), null);
        linger(socket);
        return null;
    }

    private void respond(Socket socket, ConnectionSlots.Slot slot, byte[] head) throws IOException {
        String[] lines = new String(head, StandardCharsets.ISO_8859_1).split("\r\n");
        String[] requestLine = lines[0].split(" ");
        if (requestLine.length != 3 || !requestLine[2].startsWith("HTTP/1.")) {
            send(socket, "GET", 400, TEXT, text("bad request"), null);
            return;
        }
        String method = requestLine[0];
        if (!method.equals("GET") && !method.equals("HEAD")) {
            send(socket, method, 405, TEXT, text("method not allowed"), "GET, HEAD");
            return;
        }
        String target = requestLine[1];
        int query = target.indexOf('?');
        String path = query < 0 ? target : target.substring(0, query);
        try {
            switch (path) {
                case "/metrics" -> scrape(socket, slot, method, header(lines, "accept"));
                case "/healthz" -> probe(socket, method, status::alive);
                case "/readyz" -> probe(socket, method, status::ready);
                default -> send(socket, method, 404, TEXT, text("not found: /metrics, /healthz, /readyz"), null);
            }
        } catch (RuntimeException e) {
            log.warn("{} {} failed", method, path, e);
            send(socket, method, 500, TEXT, text("internal error"), null);
        }
    }

    private void scrape(Socket socket, ConnectionSlots.Slot slot, String method, String accept) throws IOException {
        if (!slots.scraping(slot)) {
            // A slow reader stretches a scrape to the exchange deadline: a few per address, or
            // many addresses' slow scrapes would pin every slot and keep the probes out.
            send(socket, method, 503, TEXT, text("too many scrapes at once"), null);
            return;
        }
        boolean permitted;
        try {
            permitted = renders.tryAcquire(limits.headerDeadline().toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        if (!permitted) {
            send(socket, method, 503, TEXT, text("too many scrapes at once"), null);
            return;
        }
        PrometheusScrape scrape;
        try {
            scrape = metrics.scrape(accept);
        } finally {
            renders.release();
        }
        send(socket, method, 200, scrape.contentType(), scrape.body(), null);
    }

    private static void probe(Socket socket, String method, BooleanSupplier check) throws IOException {
        boolean ok = check.getAsBoolean();
        send(socket, method, ok ? 200 : 503, TEXT, text(ok ? "ok" : "not ok"), null);
    }

    /** Writes the whole answer and half-closes: the client sees its end. */
    private static void send(Socket socket, String method, int code, String contentType, byte[] body, String allow)
            throws IOException {
        StringBuilder h = new StringBuilder(160).append("HTTP/1.1 ").append(code).append(' ').append(reason(code))
                .append("\r\nContent-Type: ").append(contentType)
                .append("\r\nCache-Control: no-store\r\nConnection: close\r\nContent-Length: ").append(body.length);
        if (allow != null) {
            h.append("\r\nAllow: ").append(allow);
        }
        OutputStream out = socket.getOutputStream();
        out.write(h.append("\r\n\r\n").toString().getBytes(StandardCharsets.ISO_8859_1));
        if (!method.equals("HEAD")) {
            out.write(body);
        }
        out.flush();
        socket.shutdownOutput();
    }

    /**
     * Drains briefly after the answer: closing with unread request bytes (a POST body) would
     * reset the connection and could destroy the answer before the client reads it.
     */
    private static void linger(Socket socket) throws IOException {
        socket.setSoTimeout(1000);
        InputStream in = socket.getInputStream();
        byte[] sink = new byte[4096];
        try {
            for (int total = 0, n; total < 65536 && (n = in.read(sink)) >= 0; ) {
                total += n;
            }
        } catch (SocketTimeoutException e) {
            // the client keeps its side open: close ours anyway
        }
    }

    private static void pause() {
        try {
            Thread.sleep(100);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static byte[] text(String line) {
        return (line + "\n").getBytes(StandardCharsets.UTF_8);
    }

    private static String header(String[] lines, String name) {
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            if (colon > 0 && lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT).equals(name)) {
                return lines[i].substring(colon + 1).trim();
            }
        }
        return null;
    }

    private static String reason(int code) {
        return switch (code) {
            case 200 -> "OK";
            case 400 -> "Bad Request";
            case 404 -> "Not Found";
            case 405 -> "Method Not Allowed";
            case 431 -> "Request Header Fields Too Large";
            case 500 -> "Internal Server Error";
            default -> "Service Unavailable";
        };
    }

    /** Where the blank line that ends the head starts, or -1. */
    private static int endOfHead(byte[] b, int from, int to) {
        for (int i = from; i + 3 < to; i++) {
            if (b[i] == '\r' && b[i + 1] == '\n' && b[i + 2] == '\r' && b[i + 3] == '\n') {
                return i;
            }
        }
        return -1;
    }

    private static void closeQuietly(Closeable socket) {
        try {
            socket.close();
        } catch (IOException ignored) {
            // already closed
        }
    }
}
