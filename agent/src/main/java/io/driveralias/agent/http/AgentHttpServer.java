package io.driveralias.agent.http;

import io.driveralias.agent.metrics.PrometheusScrape;
import io.driveralias.agent.webconfig.ServerTls;
import io.driveralias.agent.webconfig.WebSecurity;
import java.io.Closeable;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import javax.net.ssl.SSLSocket;
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
    private static final int BACKLOG = 128;
    /** Scrapes render the whole registry; a burst of them must not take every CPU. */
    private static final int CONCURRENT_RENDERS = 2;
    /** A TLS record header and the start of a ClientHello; the rest is read by the TLS socket. */
    private static final int FIRST_TLS_READ = 512;

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
    private final WebSecurity security;
    private final ConnectionSlots slots;
    private final Semaphore renders = new Semaphore(CONCURRENT_RENDERS);
    private final Set<Socket> open = ConcurrentHashMap.newKeySet();
    private final ScheduledThreadPoolExecutor deadlines;

    /**
     * Binds {@code address} at once (port 0 picks a free port, see {@link #port()}); requests
     * are answered after {@link #start()}.
     */
    public AgentHttpServer(InetSocketAddress address, MetricsSource metrics, AgentStatus status) throws IOException {
        this(address, metrics, status, WebSecurity.NONE);
    }

    /** With TLS and basic authentication as {@code security} (a {@code --web-config-file}) says. */
    public AgentHttpServer(InetSocketAddress address, MetricsSource metrics, AgentStatus status, WebSecurity security)
            throws IOException {
        this(address, metrics, status, Limits.DEFAULT, security);
    }

    AgentHttpServer(InetSocketAddress address, MetricsSource metrics, AgentStatus status, Limits limits) throws IOException {
        this(address, metrics, status, limits, WebSecurity.NONE);
    }

    AgentHttpServer(InetSocketAddress address, MetricsSource metrics, AgentStatus status, Limits limits,
                    WebSecurity security) throws IOException {
        this.metrics = metrics;
        this.status = status;
        this.limits = limits;
        this.security = security;
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
        WebSecurity.Snapshot web = security.current();
        log.info("listening on {} for /metrics, /healthz and /readyz ({}{})", listener.getLocalSocketAddress(),
                web.tls().isPresent() ? "HTTPS" : "HTTP",
                web.users().isEmpty() ? "" : ", basic authentication except /healthz and /readyz");
    }

    /** The bound port: the one asked for, or the one the system chose for port 0. */
    public int port() {
        return listener.getLocalPort();
    }

    /** Connections being served now, evicted ones whose threads are still ending included (for tests and the curious). */
    int openConnections() {
        return open.size();
    }

    /** Connections holding one of {@link Limits#maxConnections} slots now. */
    int heldSlots() {
        return slots.held();
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

    private void serve(Socket raw, ConnectionSlots.Slot slot) {
        ScheduledFuture<?> cut = null;
        try (raw) { // closing the plain socket ends a TLS one on it too, without waiting on the peer
            cut = deadlines.schedule(() -> closeQuietly(raw), limits.exchangeDeadline().toMillis(), TimeUnit.MILLISECONDS);
            long deadline = System.nanoTime() + limits.headerDeadline().toNanos();
            WebSecurity.Snapshot web = security.current();
            Optional<ServerTls> tls = web.tls();
            Socket socket = raw;
            if (tls.isPresent()) {
                // TLS costs memory (records, handshake state) only once the client has sent
                // something: an idle connection stays a bare socket, however many there are.
                byte[] first = firstBytes(raw, deadline);
                if (first == null) {
                    return;
                }
                SSLSocket ssl = tls.get().wrap(raw, first);
                if (!handshake(ssl, slots.handshakes(slot), deadline)) {
                    return;
                }
                socket = ssl;
            }
            HttpExchange exchange = new HttpExchange(socket, web);
            byte[] head = exchange.readHead(deadline, limits.maxHeaderBytes());
            if (head == null) {
                return; // closed, timed out, oversized, evicted or a failed handshake: nothing worth answering
            }
            if (exchange.socket() instanceof SSLSocket ssl && !tls.get().allowed(ssl)) {
                log.debug("connection from {} refused: its certificate names none of client_allowed_sans", raw.getRemoteSocketAddress());
                return;
            }
            if (!slots.answering(slot)) {
                return;
            }
            respond(exchange, slot, head);
            slots.answered(slot);
            exchange.linger();
        } catch (IOException | RuntimeException e) {
            log.debug("connection from {} ended: {}", raw.getRemoteSocketAddress(), e.toString());
        } finally {
            if (cut != null) {
                cut.cancel(false);
            }
            open.remove(raw);
            slots.release(slot);
        }
    }

    /** The TLS handshake, within the head's deadline and the address's handshake permits; false if it did not happen. */
    private static boolean handshake(SSLSocket ssl, Semaphore permits, long deadline) throws IOException {
        long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        try {
            if (left <= 0 || !permits.tryAcquire(left, TimeUnit.MILLISECONDS)) {
                return false;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
        try {
            left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (left <= 0) {
                return false;
            }
            ssl.setSoTimeout((int) Math.min(left, Integer.MAX_VALUE));
            ssl.startHandshake();
            return true;
        } finally {
            permits.release();
        }
    }

    /** What the client sent first (the start of a TLS ClientHello), or null at the deadline or the end. */
    private static byte[] firstBytes(Socket raw, long deadline) throws IOException {
        long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        if (left <= 0) {
            return null;
        }
        raw.setSoTimeout((int) Math.min(left, Integer.MAX_VALUE));
        byte[] first = new byte[FIRST_TLS_READ];
        int n;
        try {
            n = raw.getInputStream().read(first);
        } catch (SocketTimeoutException e) {
            return null;
        }
        return n <= 0 ? null : Arrays.copyOf(first, n);
    }

    private void respond(HttpExchange exchange, ConnectionSlots.Slot slot, byte[] head) throws IOException {
        String[] lines = new String(head, StandardCharsets.ISO_8859_1).split("\r\n");
        String[] requestLine = lines[0].split(" ");
        if (requestLine.length != 3 || !requestLine[2].startsWith("HTTP/1.")) {
            exchange.sendText("GET", 400, "bad request");
            return;
        }
        String method = requestLine[0];
        String target = requestLine[1];
        int query = target.indexOf('?');
        String path = query < 0 ? target : target.substring(0, query);
        if (exchange.web().authenticates(path) && !authorized(exchange, method, HttpExchange.header(lines, "authorization"))) {
            return;
        }
        if (!method.equals("GET") && !method.equals("HEAD")) {
            exchange.sendText(method, 405, "method not allowed", "Allow", "GET, HEAD");
            return;
        }
        try {
            switch (path) {
                case "/metrics" -> scrape(exchange, slot, method, HttpExchange.header(lines, "accept"));
                case "/healthz" -> probe(exchange, method, status::alive);
                case "/readyz" -> probe(exchange, method, status::ready);
                default -> exchange.sendText(method, 404, "not found: /metrics, /healthz, /readyz");
            }
        } catch (RuntimeException e) {
            log.warn("{} {} failed", method, path, e);
            exchange.sendText(method, 500, "internal error");
        }
    }

    /** Basic authentication, as the web configuration asks; false when the refusal has been sent. */
    private boolean authorized(HttpExchange exchange, String method, String authorization) throws IOException {
        return switch (security.authorize(exchange.web(), authorization)) {
            case ALLOWED -> true;
            case DENIED -> {
                exchange.sendText(method, 401, "unauthorized", "WWW-Authenticate", "Basic realm=\"driver-alias-agent\"");
                yield false;
            }
            case BUSY -> {
                // Passwords are checked one at a time (bcrypt is slow on purpose): come back.
                exchange.sendText(method, 429, "too many password checks at once", "Retry-After", "1");
                yield false;
            }
        };
    }

    private void scrape(HttpExchange exchange, ConnectionSlots.Slot slot, String method, String accept) throws IOException {
        if (!slots.scraping(slot)) {
            // A slow reader stretches a scrape to the exchange deadline: a few per address, or
            // many addresses' slow scrapes would pin every slot and keep the probes out.
            exchange.sendText(method, 503, "too many scrapes at once");
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
            exchange.sendText(method, 503, "too many scrapes at once");
            return;
        }
        PrometheusScrape scrape;
        try {
            scrape = metrics.scrape(accept);
        } finally {
            renders.release();
        }
        exchange.send(method, 200, scrape.contentType(), scrape.body());
    }

    private static void probe(HttpExchange exchange, String method, BooleanSupplier check) throws IOException {
        boolean ok = check.getAsBoolean();
        exchange.sendText(method, ok ? 200 : 503, ok ? "ok" : "not ok");
    }

    private static void pause() {
        try {
            Thread.sleep(100);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void closeQuietly(Closeable socket) {
        try {
            socket.close();
        } catch (IOException ignored) {
            // already closed
        }
    }
}
