package io.driveralias.agent.grpc;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ByteChannel;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One HTTP/2 connection with prior knowledge (h2c, RFC 9113 3.3) as a gRPC client uses it: the
 * calling threads open streams and write their requests; one reading thread ({@link #run}) reads
 * every frame, answers SETTINGS and PING, keeps both directions' flow control, and hands each
 * stream's headers and data to its {@link GrpcStream}. Streams are only the client's (no push).
 *
 * <p>Locks: {@link #writeLock} keeps frames whole and new streams in id order; {@link #state}
 * guards the streams and the windows. The writing lock may be taken before the state, never the
 * other way round: the reading thread never waits to write while it holds the state, so a writer
 * waiting for window always lets the reader in to grant it. Every wait is bounded: a writer's and
 * a caller's by the call's deadline, the reading thread's writes by {@link #WRITE_STALL}; the
 * reading thread's wait for the next frame is the connection's idle time, ended by the server's
 * close or by {@link #close}.
 */
final class H2Connection implements AutoCloseable {

    /** The window each stream starts with: events are a few hundred bytes, a record a few KiB. */
    static final int STREAM_WINDOW = 256 << 10;
    /** The whole connection's: several answers at once. */
    static final int CONNECTION_WINDOW = 1 << 20;
    /** The largest header list the client reads; containerd's are a few hundred bytes. */
    static final int MAX_HEADER_LIST = 16 << 10;
    static final int HEADER_TABLE = 4096;
    /** Streams open at once, whatever the server allows: the agent makes a handful of calls at a time. */
    static final int MAX_STREAMS = 100;
    /** The largest request: containerd's requests are a few hundred bytes. */
    static final int MAX_REQUEST = 64 << 10;
    static final long WRITE_STALL = TimeUnit.SECONDS.toNanos(5);
    /** The last stream id a connection opens before it is retired for a new one (RFC 9113 5.1.1: 2^31 - 1). */
    static final int LAST_STREAM_ID = Integer.MAX_VALUE - 2;

    private final ByteChannel channel;
    private final ReentrantLock writeLock = new ReentrantLock();
    /** The callers' frames, under {@link #writeLock}: a request's headers and its message's DATA frames. */
    private final ByteBuffer out = ByteBuffer.allocate(2 * FrameReader.HEADER + 1024 + MAX_REQUEST + 16 * FrameReader.HEADER);

    private final Object state = new Object();
    private final Map<Integer, GrpcStream> streams = new HashMap<>();
    private int nextStreamId = 1;
    private int opening;
    private final PeerLimits peer = new PeerLimits();
    private boolean goingAway;
    /** No longer the client's current connection: closed once its last call is over. */
    private boolean retired;
    private GrpcException broken;
    /** How long a caller whose write failed waits for the reading thread's reason. */
    private static final long READER_GRACE = TimeUnit.SECONDS.toNanos(1);
    private volatile Thread reader;

    private final H2Reader reading;

    /** @param readAhead the reading thread's buffer (a frame at least, on the heap) */
    H2Connection(ByteChannel channel, ByteBuffer readAhead) {
        this.channel = channel;
        this.reading = new H2Reader(this, new FrameReader(channel, readAhead));
    }

    /** The reading thread: frames until the server closes the connection or it breaks; then every call fails. */
    void run() {
        reader = Thread.currentThread();
        fail(reading.run());
    }

    /** The client's preface: the magic, its SETTINGS, and the connection's window raised. */
    void start() throws IOException {
        ByteBuffer preface = ByteBuffer.allocate(Frames.PREFACE.length + 64);
        preface.put(Frames.PREFACE);
        Frames.settings(preface, Frames.SETTINGS_ENABLE_PUSH, 0, Frames.SETTINGS_MAX_CONCURRENT_STREAMS, 0,
                Frames.SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW, Frames.SETTINGS_MAX_HEADER_LIST_SIZE, MAX_HEADER_LIST);
        Frames.windowUpdate(preface, 0, CONNECTION_WINDOW - 65_535);
        write(preface.flip());
    }

    /**
     * The client has moved on to a new connection (this one is going away): it is closed once its
     * open calls are over (a server that sent GOAWAY and keeps the connection open costs nothing).
     */
    void retire() {
        synchronized (state) {
            retired = true;
        }
        closeIfRetiredAndIdle();
    }

    private void closeIfRetiredAndIdle() {
        boolean idle;
        synchronized (state) {
            idle = retired && streams.isEmpty() && opening == 0;
        }
        if (idle) {
            close();
        }
    }

    /** Whether new calls may use this connection: not broken, not going away. */
    boolean usable() {
        synchronized (state) {
            return broken == null && !goingAway;
        }
    }

    /** Why the connection ended; null while it serves. */
    GrpcException failure() {
        synchronized (state) {
            return broken;
        }
    }

    /** How many frames the reading thread has read. */
    long framesRead() {
        return reading.framesRead();
    }

    /**
     * Opens a stream and sends the request: headers, then {@code message} in a gRPC frame, the
     * stream half-closed after it. Waits for a stream slot and for window, within {@code deadline},
     * which a unary call's request carries ({@code grpc-timeout}) and a streaming call's does not.
     */
    GrpcStream open(byte[] path, byte[][] extra, byte[] message, boolean streaming, int maxMessage, long deadline)
            throws GrpcException, InterruptedException {
        if (message.length > MAX_REQUEST) {
            throw new GrpcException(GrpcException.Code.INTERNAL, "a request of " + message.length + " bytes", null);
        }
        synchronized (state) {
            while (broken == null && !goingAway && streams.size() + opening >= Math.min(MAX_STREAMS, peer.maxStreams)) {
                waitState(deadline);
            }
            checkUsable();
            opening++;
        }
        try {
            lock(deadline);
        } catch (GrpcException | InterruptedException e) {
            synchronized (state) {
                opening--;
                state.notifyAll();
            }
            throw e;
        }
        GrpcStream stream;
        int sent;
        try {
            out.clear();
            synchronized (state) {
                opening--;
                checkUsable();
                stream = new GrpcStream(nextStreamId, streaming, maxMessage, STREAM_WINDOW, peer.initialWindow);
                streams.put(stream.id, stream);
                nextStreamId += 2;
                goingAway |= nextStreamId > LAST_STREAM_ID;
                int position = out.position();
                out.position(position + FrameReader.HEADER);
                Frames.requestHeaders(out, path, extra, streaming ? -1 : Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
                Frames.header(out.duplicate().position(position), out.position() - position - FrameReader.HEADER, FrameReader.HEADERS,
                        FrameReader.END_HEADERS, stream.id);
                sent = peer.data(out, stream, message, 0);
            }
            write(out.flip());
        } finally {
            writeLock.unlock();
        }
        // The rest of a request larger than the server's windows, as it grants more.
        while (sent < PeerLimits.framedLength(message) && !stream.isOver()) {
            synchronized (state) {
                while (broken == null && !stream.isOver() && !peer.open(stream)) {
                    waitState(deadline);
                }
                checkBroken();
            }
            lock(deadline);
            try {
                out.clear();
                synchronized (state) {
                    sent = peer.data(out, stream, message, sent);
                }
                write(out.flip());
            } finally {
                writeLock.unlock();
            }
        }
        return stream;
    }

    /**
     * Ends a call the client gives up on (its deadline, its caller's close; {@code why}, or null for
     * a call failed already): RST_STREAM CANCEL if it is still open. A connection that cannot take
     * the frame is ended instead.
     */
    void cancel(GrpcStream stream, GrpcException why) {
        if (why != null) {
            stream.fail(why);
        }
        boolean open;
        synchronized (state) {
            open = streams.remove(stream.id) != null;
            state.notifyAll();
        }
        if (open) {
            sendControl(c -> Frames.rstStream(c, stream.id, H2ProtocolException.CANCEL), ByteBuffer.allocate(16));
        }
        closeIfRetiredAndIdle();
    }

    /** Gives {@code n} bytes of a streaming call's window back to the server (its reader took messages). */
    void grant(GrpcStream stream, int n) {
        synchronized (state) {
            if (!streams.containsKey(stream.id)) {
                return;
            }
        }
        stream.granted(n);
        sendControl(c -> Frames.windowUpdate(c, stream.id, n), ByteBuffer.allocate(16));
    }

    /** The server's SETTINGS, as (identifier, value) pairs, applied (RFC 9113 6.5.2). */
    void peerSettings(long[] pairs) throws H2ProtocolException {
        synchronized (state) {
            peer.settings(pairs, streams.values());
            state.notifyAll();
        }
    }

    /** The server's GOAWAY: no new streams here; the open ones after {@code last}, refused, are returned. */
    List<GrpcStream> goAway(long last) {
        List<GrpcStream> refused = new ArrayList<>();
        synchronized (state) {
            goingAway = true;
            for (GrpcStream s : streams.values()) {
                if (s.id > last) {
                    refused.add(s);
                }
            }
            refused.forEach(s -> streams.remove(s.id));
            state.notifyAll();
        }
        return refused;
    }

    /** WINDOW_UPDATE: more the client may send on the connection (stream 0) or a stream. */
    void windowUpdate(int stream, long increment) throws H2ProtocolException {
        synchronized (state) {
            GrpcStream s = stream == 0 ? null : streams.get(stream);
            if (stream == 0 || s != null) {
                peer.update(s, increment);
            }
            state.notifyAll();
        }
    }

    /** The open stream of {@code id}; null for one closed already; an error for one never opened. */
    GrpcStream stream(int id) throws H2ProtocolException {
        if (id == 0) {
            throw H2ProtocolException.protocol("a stream frame on stream 0");
        }
        synchronized (state) {
            if (id % 2 == 0 || id >= nextStreamId) {
                throw H2ProtocolException.protocol("a frame on stream " + id + ", which the client did not open");
            }
            return streams.get(id);
        }
    }

    /** A stream the server ended (or reset): its slot is free. */
    void closed(GrpcStream stream) {
        synchronized (state) {
            streams.remove(stream.id);
            state.notifyAll();
        }
        closeIfRetiredAndIdle();
    }

    /** Ends the connection: every open call fails with {@code why}, new calls go elsewhere. */
    void fail(GrpcException why) {
        List<GrpcStream> open;
        GrpcException reason;
        synchronized (state) {
            if (broken == null) {
                broken = why;
            }
            reason = broken;
            open = new ArrayList<>(streams.values());
            streams.clear();
            state.notifyAll();
        }
        open.forEach(s -> s.fail(reason));
        try {
            channel.close();
        } catch (IOException e) {
            // closing: nothing more to do
        }
    }

    @Override
    public void close() {
        fail(new GrpcException(GrpcException.Code.UNAVAILABLE, "the client closed the connection", null));
    }

    @FunctionalInterface
    interface FrameWriter {
        void write(ByteBuffer out);
    }

    /** A control frame, written within {@link #WRITE_STALL}; a connection that cannot take it is ended. */
    void sendControl(FrameWriter frame, ByteBuffer buffer) {
        try {
            if (!writeLock.tryLock(WRITE_STALL, TimeUnit.NANOSECONDS)) {
                fail(new GrpcException(GrpcException.Code.UNAVAILABLE, "writes to the connection stalled", null));
                return;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            fail(new GrpcException(GrpcException.Code.CANCELLED, "interrupted", e));
            return;
        }
        try {
            buffer.clear();
            frame.write(buffer);
            write(buffer.flip());
        } catch (GrpcException e) {
            // the connection is ended
        } finally {
            writeLock.unlock();
        }
    }

    /**
     * Writes all of {@code buffer}, under {@link #writeLock}; a failure ends the connection. The
     * socket blocks only while the server reads nothing (the client's writes are small): a call
     * that then passes its deadline with nothing read ends the connection
     * ({@link GrpcClient}), which ends this write.
     */
    private void write(ByteBuffer buffer) throws GrpcException {
        try {
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
        } catch (IOException e) {
            throw failed(e);
        }
    }

    private void lock(long deadline) throws GrpcException, InterruptedException {
        if (!writeLock.tryLock(deadline - System.nanoTime(), TimeUnit.NANOSECONDS)) {
            throw new GrpcException(GrpcException.Code.DEADLINE_EXCEEDED, "waiting to write", null);
        }
    }

    private void waitState(long deadline) throws GrpcException, InterruptedException {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
            throw new GrpcException(GrpcException.Code.DEADLINE_EXCEEDED, "waiting for a stream or window", null);
        }
        TimeUnit.NANOSECONDS.timedWait(state, left);
    }

    private void checkUsable() throws GrpcException {
        checkBroken();
        if (goingAway) {
            throw new GrpcException(GrpcException.Code.UNAVAILABLE, "the connection is going away", null);
        }
    }

    private void checkBroken() throws GrpcException {
        if (broken != null) {
            throw broken;
        }
    }

    /**
     * A write failed: the connection ends. The server may have answered and closed before the
     * write (an HTTP/1.1 server answers the preface with a status line and hangs up): what the
     * reading thread makes of its answer is the better reason, so a caller waits a moment for it.
     */
    private GrpcException failed(IOException e) {
        if (Thread.currentThread() != reader) {
            long until = System.nanoTime() + READER_GRACE;
            synchronized (state) {
                for (long left = READER_GRACE; broken == null && left > 0; left = until - System.nanoTime()) {
                    try {
                        TimeUnit.NANOSECONDS.timedWait(state, left);
                    } catch (InterruptedException interrupted) {
                        Thread.currentThread().interrupt();
                        break;
                    }
                }
            }
        }
        fail(new GrpcException(GrpcException.Code.UNAVAILABLE, "connection: " + e.getMessage(), e));
        synchronized (state) {
            return broken;
        }
    }
}
