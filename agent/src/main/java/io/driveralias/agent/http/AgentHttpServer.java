package io.driveralias.agent.http;

import io.driveralias.agent.webconfig.BasicAuth;
import io.driveralias.agent.webconfig.ServerTls;
import io.driveralias.agent.webconfig.ServingPriority;
import io.driveralias.agent.webconfig.WebSecurity;
import java.io.Closeable;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.SSLSocket;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code /metrics}, {@code /healthz} and {@code /readyz}: a small HTTP/1.1 server that a
 * hostile client cannot hold hostage. The port is reachable from any pod, and a liveness probe
 * that hangs gets the agent restarted, so every connection is bounded: one virtual thread each
 * (an idle or slow client costs a parked virtual thread, never a pool slot; an address holding
 * few connections gets a kernel thread of a few, so that the probes never queue for a carrier behind a
 * flood's connections), at most
 * {@link Limits#maxConnections} at once and {@link Limits#maxPerClient} from one address, where a
 * newcomer evicts a connection that has not sent its request yet rather than be refused (see
 * {@link ConnectionSlots}: however many addresses hold idle connections, a probe gets in), the
 * request head must arrive complete within {@link Limits#headerDeadline} and fit
 * {@link Limits#maxHeaderBytes}, and the whole exchange, a slow reader of a large scrape
 * included, is cut at {@link Limits#exchangeDeadline}. One request per connection
 * ({@code Connection: close}). The JDK's com.sun.net.httpserver was dropped: its timeouts are
 * JVM-wide system properties read once, and its default has none.
 *
 * <p>What a client makes the agent compute is bounded per address and in total, and waiting for
 * it holds no slot: TLS handshakes take turns per address ({@link TlsStart}), password checks
 * take turns of bcrypt per address ({@code BcryptQueue}), and a connection waiting for either
 * stays evictable. The probes never wait for a password. The serving threads run at a lower
 * priority than the repairs ({@link ServingPriority}).
 */
public final class AgentHttpServer implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(AgentHttpServer.class);
    /**
     * Connections the kernel holds until they are accepted (capped by {@code net.core.somaxconn},
     * 4096 by default since Linux 5.4). More than the connections a flood can have in flight
     * ({@link Limits#maxConnections} and the evicted ones reconnecting): with 128, 1,024
     * connections looping on connect filled it, and the kernel dropped the probe's SYN, which a
     * client resends only after a second.
     */
    private static final int BACKLOG = 4096;
    /** Connections that the kubelet's probes or a Prometheus hold at most, with room to spare. */
    private static final int FEW = 8;
    /** Kernel threads for the connections of addresses that hold fewer than {@link #FEW} (see {@link #acceptLoop}). */
    private static final int QUIET_THREADS = 16;
    /**
     * Of those, one address's at most: the kubelet's two probes, or Prometheus' scrape and a
     * spare. Without it two addresses holding 8 idle connections each took all 16, and the probe
     * ran on a virtual thread behind the flood's.
     */
    private static final int QUIET_THREADS_PER_CLIENT = 2;
    /**
     * Connections held at once over TLS, fewer than {@link Limits#maxConnections}: a handshaken
     * connection keeps the TLS layer's record buffers, and 64 addresses holding 8 each, with a
     * request head of 8 KB that never ended, ran the 32 MiB heap out after 367. Past this a
     * newcomer evicts as ever, so a probe still gets in.
     */
    static final int TLS_CONNECTIONS = 128;

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
    private final Limits limits;
    private final WebSecurity security;
    private final ConnectionSlots slots;
    private final TlsStart tlsStart;
    private final ConnectionRate connectionRate = new ConnectionRate();
    private final Responder responder;
    private final Set<Socket> open = ConcurrentHashMap.newKeySet();
    private final AtomicLong accepted = new AtomicLong();
    /** Connection threads alive: the held slots and the evicted ones still ending, half as many again. */
    private final Semaphore threads;
    /** Threads past that bound, for addresses that hold fewer than {@link #FEW} connections. */
    private final Semaphore reserve = new Semaphore(64);
    private final QuietThreads quietThreads = new QuietThreads(QUIET_THREADS, QUIET_THREADS_PER_CLIENT);
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
        this.limits = limits;
        this.security = security;
        // Fewer connections held over TLS (on or off takes a restart): see TLS_CONNECTIONS.
        int held = security.current().tls().isPresent() ? Math.min(TLS_CONNECTIONS, limits.maxConnections()) : limits.maxConnections();
        this.slots = new ConnectionSlots(held, limits.maxPerClient());
        this.responder = new Responder(metrics, status, slots, limits.headerDeadline());
        this.threads = new Semaphore(limits.maxConnections() + limits.maxConnections() / 2);
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
        tlsStart = new TlsStart(deadlines);
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

    /** Connections taken from the kernel's queue since the start, closed at once or served (for tests). */
    long acceptedConnections() {
        return accepted.get();
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
        ServingPriority.lowerThisThread();
        while (!listener.isClosed()) {
            Socket socket;
            try {
                socket = listener.accept();
                accepted.incrementAndGet();
            } catch (IOException e) {
                if (!listener.isClosed()) {
                    log.warn("accept failed: {}", e.toString());
                    pause(); // e.g. out of file descriptors: do not spin
                }
                continue;
            }
            InetAddress peer = socket.getInetAddress();
            boolean quiet = slots.heldBy(peer) < FEW;
            Semaphore thread = connectionRate.admit(peer) ? threadFor(peer) : null;
            if (thread == null) {
                closeQuietly(socket); // before it costs a thread
                continue;
            }
            Connection connection = new Connection(socket);
            ConnectionSlots.Slot slot;
            try {
                socket.setTcpNoDelay(true); // an answer's head and body go out at once, not 40 ms apart (Nagle, delayed ACK)
                slot = slots.admit(peer, connection);
            } catch (IOException e) {
                slot = null;
            }
            if (slot == null) {
                // Every slot it could take is being answered: those end within the exchange deadline.
                thread.release();
                closeQuietly(socket);
                continue;
            }
            open.add(socket);
            ConnectionSlots.Slot admitted = slot;
            // A quiet address (the kubelet's probes, Prometheus) gets a kernel thread while there
            // are some: the kernel wakes it as its bytes arrive, where a virtual thread would queue
            // behind every runnable connection of a flood for its carrier (on a loaded 2-core machine,
            // under a flood of TLS handshakes, a probe was answered 1.09 s after its handshake).
            boolean own = quiet && quietThreads.take(peer);
            Runnable work = () -> {
                try {
                    serve(connection, admitted, !quiet);
                } finally {
                    thread.release();
                    if (own) {
                        quietThreads.giveBack(peer);
                    }
                }
            };
            if (own) {
                Thread.ofPlatform().name("http-conn-quiet").daemon().start(work); // at the acceptor's nice, as it inherits it
            } else {
                Thread.ofVirtual().name("http-conn").start(work);
            }
        }
    }

    /**
     * A permit for one more connection thread, or null. An evicted connection's thread ends when
     * it next runs; under a flood that evicts as fast as it connects, on starved cores, those could
     * pile up: past the bound, only an address holding few connections (the kubelet's, Prometheus')
     * gets a thread, from a reserve of its own.
     */
    private Semaphore threadFor(InetAddress peer) {
        if (threads.tryAcquire()) {
            return threads;
        }
        return slots.heldBy(peer) < FEW && reserve.tryAcquire() ? reserve : null;
    }

    /** {@code busy}: the client's address held many connections when this one was accepted. */
    private void serve(Connection connection, ConnectionSlots.Slot slot, boolean busy) {
        if (Thread.currentThread().isVirtual()) {
            ServingPriority.lowerCarrier(); // below the repairs
        }
        Socket raw = connection.socket();
        ScheduledFuture<?> cut = null;
        try (raw) { // closing the plain socket ends a TLS one on it too, without waiting on the peer
            cut = deadlines.schedule(() -> closeQuietly(raw), limits.exchangeDeadline().toMillis(), TimeUnit.MILLISECONDS);
            long accepted = System.nanoTime();
            long deadline = accepted + limits.headerDeadline().toNanos();
            WebSecurity.Snapshot web = security.current();
            Optional<ServerTls> tls = web.tls();
            Socket socket = raw;
            if (tls.isPresent()) {
                SSLSocket ssl = tlsStart.handshake(connection, tls.get(), accepted, deadline, busy);
                if (ssl == null) {
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
            HttpExchange.Request request = HttpExchange.Request.parse(head);
            BasicAuth.Verdict verdict = BasicAuth.Verdict.ALLOWED;
            if (request != null && web.authenticates(request.path())) {
                // Still evictable while its credentials are checked: a flood of guesses waiting
                // for bcrypt holds no slot that a probe needs.
                verdict = checkCredentials(connection, web, request.header("authorization"));
                if (verdict == null) {
                    return;
                }
            }
            if (!slots.answering(slot)) {
                return;
            }
            responder.respond(exchange, slot, request, verdict);
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

    /** The password check, in the client's turn (bounded per address and in total); null if the connection was evicted meanwhile. */
    private BasicAuth.Verdict checkCredentials(Connection connection, WebSecurity.Snapshot web, String authorization) {
        if (!connection.waiting()) {
            return null;
        }
        try {
            return security.authorize(web, authorization, connection.socket().getInetAddress());
        } catch (InterruptedException evicted) {
            return null;
        } finally {
            connection.doneWaiting();
        }
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
