package io.driveralias.agent.grpc;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * The frames the client writes (RFC 9113), into a buffer the caller then writes whole, and the
 * header blocks of its requests (RFC 7541): every field either indexed in the static table or a
 * literal without indexing, never Huffman-coded, so the client keeps no dynamic table and the
 * server's {@code SETTINGS_HEADER_TABLE_SIZE} does not concern it.
 */
final class Frames {

    static final byte[] PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

    static final int SETTINGS_HEADER_TABLE_SIZE = 0x1;
    static final int SETTINGS_ENABLE_PUSH = 0x2;
    static final int SETTINGS_MAX_CONCURRENT_STREAMS = 0x3;
    static final int SETTINGS_INITIAL_WINDOW_SIZE = 0x4;
    static final int SETTINGS_MAX_FRAME_SIZE = 0x5;
    static final int SETTINGS_MAX_HEADER_LIST_SIZE = 0x6;

    /** Static table indexes (RFC 7541 Appendix A). */
    private static final int METHOD_POST = 3;
    private static final int PATH = 4;
    private static final int SCHEME_HTTP = 6;
    private static final int AUTHORITY = 1;
    private static final int CONTENT_TYPE = 31;

    private Frames() {
    }

    static void header(ByteBuffer out, int length, int type, int flags, int stream) {
        out.put((byte) (length >>> 16)).put((byte) (length >>> 8)).put((byte) length).put((byte) type).put((byte) flags).putInt(stream);
    }

    /** SETTINGS with {@code pairs} of (identifier, value). */
    static void settings(ByteBuffer out, int... pairs) {
        header(out, pairs.length / 2 * 6, FrameReader.SETTINGS, 0, 0);
        for (int i = 0; i < pairs.length; i += 2) {
            out.putShort((short) pairs[i]).putInt(pairs[i + 1]);
        }
    }

    static void settingsAck(ByteBuffer out) {
        header(out, 0, FrameReader.SETTINGS, FrameReader.ACK, 0);
    }

    static void windowUpdate(ByteBuffer out, int stream, int increment) {
        header(out, 4, FrameReader.WINDOW_UPDATE, 0, stream);
        out.putInt(increment);
    }

    static void rstStream(ByteBuffer out, int stream, int code) {
        header(out, 4, FrameReader.RST_STREAM, 0, stream);
        out.putInt(code);
    }

    static void pingAck(ByteBuffer out, byte[] from, int offset) {
        header(out, 8, FrameReader.PING, FrameReader.ACK, 0);
        out.put(from, offset, 8);
    }

    static void goAway(ByteBuffer out, int lastStream, int code) {
        header(out, 8, FrameReader.GOAWAY, 0, 0);
        out.putInt(lastStream).putInt(code);
    }

    /**
     * A gRPC request's header block (gRPC over HTTP/2: POST, {@code application/grpc}, {@code te:
     * trailers}, its deadline in {@code grpc-timeout} unless {@code timeoutMillis} is negative) and
     * {@code extra} (name, value) pairs. A server stream has no deadline: the server would end it
     * there (containerd: "subscription error: context deadline exceeded").
     */
    static void requestHeaders(ByteBuffer out, byte[] path, byte[][] extra, long timeoutMillis) {
        out.put((byte) (0x80 | METHOD_POST)).put((byte) (0x80 | SCHEME_HTTP));
        literal(out, PATH, path);
        literal(out, AUTHORITY, LOCALHOST);
        literal(out, CONTENT_TYPE, APPLICATION_GRPC);
        literal(out, TE, TRAILERS);
        // "m": milliseconds, at most 8 digits (the gRPC over HTTP/2 protocol).
        if (timeoutMillis >= 0) {
            literal(out, GRPC_TIMEOUT, (Math.clamp(timeoutMillis, 1, 99_999_999) + "m").getBytes(StandardCharsets.US_ASCII));
        }
        for (int i = 0; i + 1 < extra.length; i += 2) {
            literal(out, extra[i], extra[i + 1]);
        }
    }

    private static final byte[] LOCALHOST = ascii("localhost");
    private static final byte[] APPLICATION_GRPC = ascii("application/grpc");
    private static final byte[] TE = ascii("te");
    private static final byte[] TRAILERS = ascii("trailers");
    private static final byte[] GRPC_TIMEOUT = ascii("grpc-timeout");

    static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    /** Literal without indexing, the name from the static table (RFC 7541 6.2.2). */
    private static void literal(ByteBuffer out, int nameIndex, byte[] value) {
        integer(out, 0x00, 4, nameIndex);
        string(out, value);
    }

    /** Literal without indexing, a new name. */
    private static void literal(ByteBuffer out, byte[] name, byte[] value) {
        out.put((byte) 0);
        string(out, name);
        string(out, value);
    }

    private static void string(ByteBuffer out, byte[] s) {
        integer(out, 0x00, 7, s.length);
        out.put(s);
    }

    /** An integer with an N-bit prefix (RFC 7541 5.1) after the bits {@code high}. */
    static void integer(ByteBuffer out, int high, int prefixBits, int value) {
        int mask = (1 << prefixBits) - 1;
        if (value < mask) {
            out.put((byte) (high | value));
            return;
        }
        out.put((byte) (high | mask));
        int rest = value - mask;
        while (rest >= 0x80) {
            out.put((byte) (rest & 0x7f | 0x80));
            rest >>>= 7;
        }
        out.put((byte) rest);
    }
}
