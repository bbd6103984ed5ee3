package io.driveralias.agent.nri;

import io.driveralias.agent.core.Printable;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The agent as an external NRI plugin of its container runtime (containerd 1.7 with NRI on, 2.x,
 * CRI-O): connects to the runtime's NRI socket, registers as {@value #NAME} at index
 * {@value #INDEX}, subscribes to CreateContainer and StartContainer, and hands what the runtime says to a
 * {@link NriHandler}. Whatever breaks the connection (the runtime restarting or dropping the plugin
 * after a timeout, the socket missing, a protocol error), the plugin connects again, with a delay
 * doubling from 100 ms to at most 1 s, registers again and receives Synchronize again; the log says
 * so once per outage, not at every try.
 *
 * <p>Threads: one reads the socket and runs the session (and the handler's quick callbacks); a
 * watchdog ends a connection the runtime does not configure within 5 s or stops reading; a timer
 * sends the answers whose deadline passed; {@code callThreads} run StartContainer handlers. A
 * StartContainer that finds every call thread busy (handlers held past their deadline) is answered
 * at once ({@link NriHandler#notServed}).
 *
 * <p>Memory: the buffers are allocated once at {@link #start()} and reused for every message and
 * every connection: 4 MiB off-heap for a message of the Plugin connection (NRI's bound; only the
 * pages a message touches become resident: {@link UntouchedBuffers}), 64 KiB for reading ahead, 64 KiB for the Runtime
 * connection's answers. Decoded pods and containers are bounded ({@link ObjectDecoder}).
 */
public final class NriPlugin implements AutoCloseable {

    public static final String NAME = "driver-alias";
    /** Two digits, as NRI wants: the plugins of a runtime are called in ascending index order. */
    public static final String INDEX = "50";
    public static final Path DEFAULT_SOCKET = Path.of("/var/run/nri/nri.sock");
    public static final int DEFAULT_CALL_THREADS = 2;

    static final Duration FIRST_RETRY = Duration.ofMillis(100);
    static final Duration MAX_RETRY = Duration.ofSeconds(1);
    /**
     * A connection that lasted this long was a working one: its loss starts a new outage (a line
     * in the log) and the next try comes after {@link #FIRST_RETRY}. A shorter one (a runtime that
     * configures the plugin and closes at once) is one more failed try of the outage in progress.
     */
    static final Duration STABLE_SESSION = Duration.ofSeconds(10);
    private static final Duration WATCH_PERIOD = Duration.ofMillis(500);
    private static final Logger LOG = LoggerFactory.getLogger(NriPlugin.class);

    private final Path socket;
    private final NriHandler handler;
    private final StartDeadline deadline;
    private final int callThreads;
    private final Object lock = new Object();
    /** The log's view of connection failures; only the reading thread uses it. */
    private final OutageLog outage = new OutageLog(LOG, MAX_RETRY);
    private Thread loop;
    private Thread watchdog;
    private ThreadPoolExecutor calls;
    private ScheduledThreadPoolExecutor timer;
    private SocketChannel connecting;
    private NriSession session;
    private volatile boolean closed;
    private volatile boolean connected;

    /** A plugin with the default budget (500 ms) and {@value #DEFAULT_CALL_THREADS} call threads. */
    public NriPlugin(Path socket, NriHandler handler) {
        this(socket, handler, StartDeadline.DEFAULT_BUDGET, DEFAULT_CALL_THREADS);
    }

    /**
     * @param budget      the longest a StartContainer is held ({@link StartDeadline}: capped by the runtime's timeout)
     * @param callThreads how many StartContainer handlers may run at once (held past their deadline included)
     */
    public NriPlugin(Path socket, NriHandler handler, Duration budget, int callThreads) {
        this.socket = Objects.requireNonNull(socket, "socket");
        this.handler = Objects.requireNonNull(handler, "handler");
        this.deadline = new StartDeadline(budget);
        if (callThreads < 1) {
            throw new IllegalArgumentException("callThreads must be at least 1: " + callThreads);
        }
        this.callThreads = callThreads;
    }

    public Path socket() {
        return socket;
    }

    /** Registered with the runtime and configured by it, on a connection that is up. */
    public boolean connected() {
        return connected;
    }

    /** Starts connecting, in the background; returns at once. */
    public void start() {
        synchronized (lock) {
            if (loop != null || closed) {
                throw new IllegalStateException("started already, or closed");
            }
            calls = new ThreadPoolExecutor(callThreads, callThreads, 0, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
                    daemons("nri-call-"));
            calls.prestartAllCoreThreads();
            timer = new ScheduledThreadPoolExecutor(1, daemons("nri-deadline"));
            timer.setRemoveOnCancelPolicy(true);
            NriSession.Setup setup = new NriSession.Setup(NAME, INDEX, new Announcing(handler), deadline, calls,
                    new Semaphore(callThreads), callThreads, timer);
            MuxBuffers buffers = new MuxBuffers(UntouchedBuffers.allocate(64 << 10), UntouchedBuffers.allocate(MuxReader.MAX_MESSAGE),
                    ByteBuffer.allocate(64 << 10));
            loop = daemons("nri-plugin").newThread(() -> run(setup, buffers));
            watchdog = daemons("nri-watchdog").newThread(this::watch);
            loop.start();
            watchdog.start();
        }
    }

    private record MuxBuffers(ByteBuffer input, ByteBuffer plugin, ByteBuffer runtime) {
    }

    /** The reading thread lives (or the plugin was never started, or is closed): for the agent's liveness. */
    public boolean alive() {
        Thread reading;
        synchronized (lock) {
            reading = loop;
        }
        return reading == null || closed || reading.isAlive();
    }

    private void run(NriSession.Setup setup, MuxBuffers buffers) {
        Duration delay = FIRST_RETRY;
        while (!closed) {
            try {
                delay = connectAndServe(setup, buffers, delay);
            } catch (RuntimeException e) {
                // A failure outside the session's own guard: the loop goes on, as after a lost connection.
                LOG.error("NRI: the plugin failed between connections; connecting again", e);
                connected = false;
            }
            if (!closed) {
                delay = pause(delay);
            }
        }
    }

    /** One connection, from connecting to its end; returns the delay before the next. */
    private Duration connectAndServe(NriSession.Setup setup, MuxBuffers buffers, Duration delay) {
        SocketChannel channel;
        try {
            channel = connect();
        } catch (IOException e) {
            outage.failed("cannot connect to " + socket + ": " + describe(e));
            return delay;
        }
        NriSession current = new NriSession(channel, new MuxReader(channel, buffers.input(), buffers.plugin(), buffers.runtime()),
                setup);
        synchronized (lock) {
            session = current;
        }
        long began = System.nanoTime();
        String why = current.serve();
        synchronized (lock) {
            session = null;
        }
        if (!current.configured()) {
            if (!closed) {
                outage.failed("the runtime on " + socket + " did not take the plugin: " + why);
            }
            return delay;
        }
        connected = false;
        safely(() -> handler.disconnected(why));
        if (closed) {
            return delay;
        }
        if (System.nanoTime() - began < STABLE_SESSION.toNanos()) {
            outage.failed("the runtime on " + socket + " ended the connection " + (System.nanoTime() - began) / 1_000_000
                    + " ms after taking the plugin: " + why);
            return delay;
        }
        LOG.warn("NRI: the connection to the runtime on {} is lost ({}); connecting again", socket, Printable.of(why));
        outage.begin();
        return FIRST_RETRY;
    }

    private SocketChannel connect() throws IOException {
        SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX);
        synchronized (lock) {
            if (closed) {
                channel.close();
                throw new IOException("closed");
            }
            connecting = channel;
        }
        try {
            channel.connect(UnixDomainSocketAddress.of(socket));
            return channel;
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e instanceof IOException io ? io : new IOException(e);
        } finally {
            synchronized (lock) {
                connecting = null;
            }
        }
    }

    private Duration pause(Duration delay) {
        try {
            Thread.sleep(delay);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            closed = true;
        }
        Duration next = delay.multipliedBy(2);
        return next.compareTo(MAX_RETRY) > 0 ? MAX_RETRY : next;
    }

    private void watch() {
        while (!closed) {
            try {
                Thread.sleep(WATCH_PERIOD);
            } catch (InterruptedException e) {
                return;
            }
            NriSession current;
            synchronized (lock) {
                current = session;
            }
            if (current != null) {
                current.watch();
            }
        }
    }

    /** Ends the connection and the plugin's threads; the runtime sees the plugin go. Returns within about a second. */
    @Override
    public void close() {
        Thread reading;
        synchronized (lock) {
            if (closed && loop == null) {
                return;
            }
            closed = true;
            if (session != null) {
                session.end("the plugin is closing");
            }
            if (connecting != null) {
                try {
                    connecting.close();
                } catch (IOException e) {
                    // closing anyway
                }
            }
            reading = loop;
        }
        if (reading != null) {
            reading.interrupt();
            watchdog.interrupt();
            try {
                reading.join(Duration.ofSeconds(1));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            calls.shutdownNow();
            timer.shutdownNow();
        }
        connected = false;
    }

    private void safely(Runnable call) {
        try {
            call.run();
        } catch (RuntimeException e) {
            LOG.warn("NRI: the handler failed: {}", Printable.of(String.valueOf(e)));
        }
    }

    private static String describe(IOException e) {
        String message = e.getMessage();
        return message == null ? e.getClass().getSimpleName() : message;
    }

    private static ThreadFactory daemons(String prefix) {
        AtomicInteger n = new AtomicInteger();
        return task -> {
            Thread t = new Thread(task, prefix.endsWith("-") ? prefix + n.incrementAndGet() : prefix);
            t.setDaemon(true);
            return t;
        };
    }

    /** Marks the plugin connected and closes the outage in the log when the runtime configures it. */
    private final class Announcing implements NriHandler {
        private final NriHandler inner;

        Announcing(NriHandler inner) {
            this.inner = inner;
        }

        @Override
        public void connected(NriRuntimeInfo runtime) {
            connected = true;
            String nri = runtime.nriVersion().isEmpty() ? "" : " (NRI " + Printable.of(runtime.nriVersion()) + ")";
            outage.ended(Printable.of(runtime.name()) + " " + Printable.of(runtime.version()) + nri + " on " + socket,
                    runtime.requestTimeout(), Duration.ofNanos(deadline.nanos(runtime.requestTimeout(), 0)));
            inner.connected(runtime);
        }

        @Override
        public void disconnected(String why) {
            inner.disconnected(why);
        }

        @Override
        public void synchronize(NriSync part) {
            inner.synchronize(part);
        }

        @Override
        public void createContainer(NriPod pod, NriContainer container) {
            inner.createContainer(pod, container);
        }

        @Override
        public boolean wantsStart(NriPod pod, NriContainer container) {
            return inner.wantsStart(pod, container);
        }

        @Override
        public void answeredAtOnce(NriPod pod, NriContainer container) {
            inner.answeredAtOnce(pod, container);
        }

        @Override
        public void startContainer(NriPod pod, NriContainer container, StartCall call) {
            inner.startContainer(pod, container, call);
        }

        @Override
        public void notServed(NriPod pod, NriContainer container, String why) {
            inner.notServed(pod, container, why);
        }
    }
}
