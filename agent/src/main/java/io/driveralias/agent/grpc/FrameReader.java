package io.driveralias.agent.grpc;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;

/**
 * HTTP/2 frames (RFC 9113 4.1) read from the server's byte stream: a 9-byte header (24-bit
 * length, type, flags, 31-bit stream id) and at most {@link #MAX_FRAME} bytes of payload, the
 * largest frame the client allows (the default {@code SETTINGS_MAX_FRAME_SIZE}, which it never
 * raises). One read-ahead buffer, given once, holds several frames per read; a frame's payload is
 * a view of it, valid until the next {@link #next()}. A frame over the bound, or the stream ending
 * inside one, is an {@link H2ProtocolException}; the end between frames is the server's close. A
 * server that answers HTTP/1.x (its first bytes {@code HTTP/}) is {@link H2ProtocolException.Http1}.
 */
final class FrameReader {

    static final int HEADER = 9;
    static final int MAX_FRAME = 16_384;

    static final int DATA = 0x0;
    static final int HEADERS = 0x1;
    static final int PRIORITY = 0x2;
    static final int RST_STREAM = 0x3;
    static final int SETTINGS = 0x4;
    static final int PUSH_PROMISE = 0x5;
    static final int PING = 0x6;
    static final int GOAWAY = 0x7;
    static final int WINDOW_UPDATE = 0x8;
    static final int CONTINUATION = 0x9;

    static final int END_STREAM = 0x1;
    static final int ACK = 0x1;
    static final int END_HEADERS = 0x4;
    static final int PADDED = 0x8;
    static final int PRIORITY_FLAG = 0x20;

    private final ReadableByteChannel channel;
    private final ByteBuffer input;
    private boolean first = true;

    /** The current frame. */
    private int type;
    private int flags;
    private int stream;
    private int length;
    private int payload;

    /** @param input the read-ahead buffer: at least one whole frame (header and {@link #MAX_FRAME}), heap-backed */
    FrameReader(ReadableByteChannel channel, ByteBuffer input) {
        if (input.capacity() < HEADER + MAX_FRAME || !input.hasArray()) {
            throw new IllegalArgumentException("read-ahead buffer too small or not on the heap");
        }
        this.channel = channel;
        this.input = input.clear().flip();
    }

    /** Reads the next frame; false once the server closed the connection between frames. */
    boolean next() throws IOException {
        input.position(input.position() + length);
        length = 0;
        if (!buffered(HEADER, true)) {
            return false;
        }
        byte[] b = input.array();
        int at = input.arrayOffset() + input.position();
        if (first && b[at] == 'H' && b[at + 1] == 'T' && b[at + 2] == 'T' && b[at + 3] == 'P' && b[at + 4] == '/') {
            throw new H2ProtocolException.Http1();
        }
        first = false;
        int declared = (b[at] & 0xff) << 16 | (b[at + 1] & 0xff) << 8 | b[at + 2] & 0xff;
        type = b[at + 3] & 0xff;
        flags = b[at + 4] & 0xff;
        stream = ((b[at + 5] & 0x7f) << 24 | (b[at + 6] & 0xff) << 16 | (b[at + 7] & 0xff) << 8 | b[at + 8] & 0xff);
        if (declared > MAX_FRAME) {
            throw new H2ProtocolException(H2ProtocolException.FRAME_SIZE_ERROR, "a frame of " + declared + " bytes over the "
                    + MAX_FRAME + " allowed");
        }
        input.position(input.position() + HEADER);
        buffered(declared, false);
        length = declared;
        payload = input.arrayOffset() + input.position();
        return true;
    }

    int type() {
        return type;
    }

    int flags() {
        return flags;
    }

    boolean flag(int flag) {
        return (flags & flag) != 0;
    }

    int stream() {
        return stream;
    }

    int length() {
        return length;
    }

    /** The array that holds the payload, from {@link #offset()} for {@link #length()} bytes. */
    byte[] array() {
        return input.array();
    }

    int offset() {
        return payload;
    }

    /** A 32-bit big-endian value at {@code at} bytes into the payload. */
    long u32(int at) {
        byte[] b = input.array();
        int i = payload + at;
        return (b[i] & 0xffL) << 24 | (b[i + 1] & 0xffL) << 16 | (b[i + 2] & 0xffL) << 8 | b[i + 3] & 0xffL;
    }

    /**
     * Makes at least {@code n} (at most the buffer's capacity) bytes readable. At the end of the
     * stream: false when nothing was read of a frame yet and {@code atBoundary}, else an error.
     */
    private boolean buffered(int n, boolean atBoundary) throws IOException {
        if (input.remaining() >= n) {
            return true;
        }
        input.compact();
        try {
            while (input.position() < n) {
                if (channel.read(input) < 0) {
                    if (atBoundary && input.position() == 0) {
                        return false;
                    }
                    throw new H2ProtocolException(H2ProtocolException.PROTOCOL_ERROR, "the server closed the connection inside a frame");
                }
            }
        } finally {
            input.flip();
        }
        return true;
    }
}
