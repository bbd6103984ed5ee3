package io.driveralias.agent.nri;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;

/**
 * The reading half of NRI's socket: frames demultiplexed, and the ttrpc messages of each
 * connection reassembled. A frame is an 8-byte header (u32 big-endian connection id, u32 length)
 * and at most {@link #MAX_FRAME} bytes of that connection's byte stream; on each connection, a
 * ttrpc message is a 10-byte header (u32 length, u32 stream id, u8 type, u8 flags) and at most
 * {@link #MAX_MESSAGE} bytes. A message may span frames, and frames of the two connections may
 * interleave. Frames of another connection are read and dropped, as NRI's own multiplexer does.
 *
 * <p>Memory: the buffers are the caller's, allocated once and reused for every message and every
 * connection made again: a read-ahead buffer, and one body buffer per connection whose capacity
 * bounds that connection's messages (the Plugin connection's holds {@link #MAX_MESSAGE}; the
 * Runtime connection only answers RegisterPlugin, so a small one does). A message over its
 * connection's bound, a frame over {@link #MAX_FRAME}, or a stream that ends inside a frame is an
 * {@link NriProtocolException}; the end of the stream between frames is the peer's clean close.
 * One thread reads; {@link #unfinishedNanos()} may be asked from another (a watchdog), since a
 * peer that begins a frame or a message and never finishes it holds the reading thread.
 */
final class MuxReader {

    static final int FRAME_HEADER = 8;
    static final int MESSAGE_HEADER = 10;
    static final int MAX_MESSAGE = 4 << 20;
    static final int MAX_FRAME = MESSAGE_HEADER + MAX_MESSAGE;
    /** The Plugin service: the runtime calls, the plugin answers. */
    static final int PLUGIN_CONNECTION = 1;
    /** The Runtime service: the plugin calls (RegisterPlugin), the runtime answers. */
    static final int RUNTIME_CONNECTION = 2;
    static final int REQUEST = 1;
    static final int RESPONSE = 2;

    /**
     * One ttrpc message: its header, and its bytes in {@code body} from 0 to {@code length}, valid
     * until the next {@link #next()}.
     *
     * @param arrivalNanos {@link System#nanoTime()} when its first byte was read
     */
    record Message(int connection, int streamId, int type, int flags, ByteBuffer body, int length, long arrivalNanos) {
        ProtoReader reader() {
            return new ProtoReader(body, 0, length);
        }
    }

    private final ReadableByteChannel channel;
    private final ByteBuffer input;
    private final Assembly plugin;
    private final Assembly runtime;
    private final byte[] frameHeader = new byte[FRAME_HEADER];
    private long frameLeft;
    private int frameConnection;
    private boolean anyRead;
    /** {@link System#nanoTime()} when the reader first waited for the rest of a frame or message; 0 while none is begun. */
    private volatile long unfinishedSince;

    /**
     * @param input       the read-ahead buffer (any capacity of at least 64 bytes)
     * @param pluginBody  where the Plugin connection's messages are assembled; its capacity is their bound
     * @param runtimeBody the same for the Runtime connection
     */
    MuxReader(ReadableByteChannel channel, ByteBuffer input, ByteBuffer pluginBody, ByteBuffer runtimeBody) {
        if (input.capacity() < 64) {
            throw new IllegalArgumentException("read-ahead buffer too small");
        }
        this.channel = channel;
        this.input = input.clear().flip();
        this.plugin = new Assembly(PLUGIN_CONNECTION, pluginBody);
        this.runtime = new Assembly(RUNTIME_CONNECTION, runtimeBody);
    }

    /** The next complete message of either connection; null once the peer closed the socket between frames. */
    Message next() throws IOException {
        while (true) {
            settle();
            if (frameLeft == 0) {
                if (!readFrameHeader()) {
                    return null;
                }
                continue;
            }
            Assembly to = frameConnection == PLUGIN_CONNECTION ? plugin : frameConnection == RUNTIME_CONNECTION ? runtime : null;
            if (to == null) {
                discard();
                continue;
            }
            Message message = to.feed();
            if (message != null) {
                settle();
                return message;
            }
        }
    }

    /** Whether the peer has sent anything yet on this socket. */
    boolean anyRead() {
        return anyRead;
    }

    /** How long the reader has waited for the rest of a frame or message the peer began, in nanoseconds; 0 when none is. */
    long unfinishedNanos() {
        long since = unfinishedSince;
        return since == 0 ? 0 : System.nanoTime() - since;
    }

    /** Nothing begun and unfinished: the wait for the next frame is the peer's idle time, not a stall. */
    private void settle() {
        if (frameLeft == 0 && !plugin.partial() && !runtime.partial()) {
            unfinishedSince = 0;
        }
    }

    /** About to block on the socket: a wait in the middle of a frame or message starts the stall clock. */
    private void waiting(boolean midway) {
        if (unfinishedSince == 0 && (midway || frameLeft > 0 || plugin.partial() || runtime.partial())) {
            unfinishedSince = System.nanoTime() | 1;
        }
    }

    private boolean readFrameHeader() throws IOException {
        if (!buffered(FRAME_HEADER, true)) {
            return false;
        }
        input.get(frameHeader);
        frameConnection = u32(frameHeader, 0) > Integer.MAX_VALUE ? -1 : (int) u32(frameHeader, 0);
        frameLeft = u32(frameHeader, 4);
        if (frameLeft > MAX_FRAME) {
            throw new NriProtocolException("frame of " + frameLeft + " bytes over the bound of " + MAX_FRAME);
        }
        return true;
    }

    private void discard() throws IOException {
        while (frameLeft > 0) {
            buffered(1, false);
            int n = (int) Math.min(frameLeft, input.remaining());
            input.position(input.position() + n);
            frameLeft -= n;
        }
    }

    /**
     * Makes at least {@code n} (≤ the read-ahead's capacity) bytes readable in {@code input}. At the
     * end of the stream: false when nothing of a frame was read yet and {@code atBoundary}, else an error.
     */
    private boolean buffered(int n, boolean atBoundary) throws IOException {
        if (input.remaining() >= n) {
            return true;
        }
        input.compact();
        try {
            while (input.position() < n) {
                waiting(input.position() > 0);
                if (channel.read(input) < 0) {
                    if (atBoundary && input.position() == 0) {
                        return false;
                    }
                    throw new NriProtocolException("the runtime closed the connection in the middle of a frame");
                }
                anyRead = true;
            }
        } finally {
            input.flip();
        }
        return true;
    }

    /** {@code n} bytes of the current frame into {@code to} at {@code at}: from the read-ahead first, then straight in. */
    private void readInto(ByteBuffer to, int at, int n) throws IOException {
        int done = 0;
        while (done < n) {
            if (!input.hasRemaining() && n - done >= input.capacity()) {
                ByteBuffer view = to.duplicate().limit(at + n).position(at + done);
                waiting(true);
                int read = channel.read(view);
                if (read < 0) {
                    throw new NriProtocolException("the runtime closed the connection in the middle of a frame");
                }
                done += read;
                continue;
            }
            buffered(1, false);
            int k = Math.min(n - done, input.remaining());
            to.put(at + done, input, input.position(), k);
            input.position(input.position() + k);
            done += k;
        }
    }

    private static long u32(byte[] b, int at) {
        return (b[at] & 0xffL) << 24 | (b[at + 1] & 0xffL) << 16 | (b[at + 2] & 0xffL) << 8 | (b[at + 3] & 0xffL);
    }

    /** One connection's message in the making. */
    private final class Assembly {
        private final int connection;
        private final ByteBuffer body;
        private final byte[] header = new byte[MESSAGE_HEADER];
        private int headerFilled;
        private int length;
        private int filled;
        private long arrival;

        Assembly(int connection, ByteBuffer body) {
            this.connection = connection;
            this.body = body;
        }

        /** A message of this connection is begun and not complete. */
        boolean partial() {
            return headerFilled > 0;
        }

        /** Takes what it needs of the current frame; the message once it is whole. */
        Message feed() throws IOException {
            if (headerFilled < MESSAGE_HEADER) {
                if (headerFilled == 0) {
                    arrival = System.nanoTime();
                }
                int n = (int) Math.min(frameLeft, MESSAGE_HEADER - headerFilled);
                buffered(n, false);
                input.get(header, headerFilled, n);
                headerFilled += n;
                frameLeft -= n;
                if (headerFilled < MESSAGE_HEADER) {
                    return null;
                }
                long declared = u32(header, 0);
                if (declared > body.capacity()) {
                    throw new NriProtocolException("message of " + declared + " bytes on connection " + connection
                            + " over the bound of " + body.capacity());
                }
                length = (int) declared;
                filled = 0;
            } else {
                int n = (int) Math.min(frameLeft, length - filled);
                readInto(body, filled, n);
                filled += n;
                frameLeft -= n;
            }
            if (filled < length) {
                return null;
            }
            headerFilled = 0;
            return new Message(connection, (int) u32(header, 4), header[8] & 0xff, header[9] & 0xff, body, length, arrival);
        }
    }
}
