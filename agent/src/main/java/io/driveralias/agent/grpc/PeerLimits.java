package io.driveralias.agent.grpc;

import java.nio.ByteBuffer;
import java.util.Collection;

/**
 * What the server allows the client to send (RFC 9113 6.5.2, 6.9): its SETTINGS (streams at
 * once, each stream's first window, the largest frame) and its window updates, and the client's
 * DATA frames cut to fit them. Its owner's state lock guards it, and the streams' send windows.
 */
final class PeerLimits {

    int maxStreams = Integer.MAX_VALUE;
    int initialWindow = 65_535;
    int maxFrame = FrameReader.MAX_FRAME;
    /** The connection's send window. */
    long window = 65_535;

    /** The server's SETTINGS as (identifier, value) pairs; a new initial window applies to every open stream. */
    void settings(long[] pairs, Collection<GrpcStream> open) throws H2ProtocolException {
        for (int i = 0; i < pairs.length; i += 2) {
            long value = pairs[i + 1];
            switch ((int) pairs[i]) {
                case Frames.SETTINGS_MAX_CONCURRENT_STREAMS -> maxStreams = (int) Math.min(value, Integer.MAX_VALUE);
                case Frames.SETTINGS_INITIAL_WINDOW_SIZE -> {
                    if (value > Integer.MAX_VALUE) {
                        throw new H2ProtocolException(H2ProtocolException.FLOW_CONTROL_ERROR, "an initial window of " + value);
                    }
                    int delta = (int) value - initialWindow;
                    initialWindow = (int) value;
                    for (GrpcStream s : open) {
                        s.sendWindow += delta;
                    }
                }
                case Frames.SETTINGS_MAX_FRAME_SIZE -> {
                    if (value < FrameReader.MAX_FRAME || value > 0xff_ffff) {
                        throw H2ProtocolException.protocol("a maximum frame size of " + value);
                    }
                    maxFrame = (int) value;
                }
                case Frames.SETTINGS_ENABLE_PUSH -> {
                    if (value > 1) {
                        throw H2ProtocolException.protocol("ENABLE_PUSH " + value);
                    }
                }
                default -> {
                    // The header table size concerns an encoder with a dynamic table; the client's has none.
                }
            }
        }
    }

    /** WINDOW_UPDATE of the connection ({@code stream} null) or of a stream. */
    void update(GrpcStream stream, long increment) throws H2ProtocolException {
        if (stream == null) {
            window += increment;
            if (window > Integer.MAX_VALUE) {
                throw new H2ProtocolException(H2ProtocolException.FLOW_CONTROL_ERROR, "the connection's window over 2^31 - 1");
            }
        } else {
            if (stream.sendWindow + increment > Integer.MAX_VALUE) {
                throw new H2ProtocolException(H2ProtocolException.FLOW_CONTROL_ERROR, "a stream's window over 2^31 - 1");
            }
            stream.sendWindow += (int) increment;
        }
    }

    /** Whether {@code stream} may send anything now. */
    boolean open(GrpcStream stream) {
        return Math.min(window, stream.sendWindow) > 0;
    }

    /** A message's length behind gRPC's 5-byte prefix. */
    static int framedLength(byte[] message) {
        return GrpcStream.PREFIX + message.length;
    }

    /**
     * As many DATA frames of the framed message, from byte {@code from} of it, as the windows
     * allow, into {@code out}, the last with END_STREAM; returns how far it got.
     */
    int data(ByteBuffer out, GrpcStream stream, byte[] message, int from) {
        int total = framedLength(message);
        int at = from;
        while (at < total) {
            int n = (int) Math.min(Math.min(total - at, maxFrame), Math.min(window, stream.sendWindow));
            if (n <= 0) {
                break;
            }
            Frames.header(out, n, FrameReader.DATA, at + n == total ? FrameReader.END_STREAM : 0, stream.id);
            for (int i = at; i < at + n; i++) {
                // The prefix: not compressed, then the length big-endian.
                out.put(i == 0 ? 0 : i < GrpcStream.PREFIX ? (byte) (message.length >>> (8 * (4 - i))) : message[i - GrpcStream.PREFIX]);
            }
            window -= n;
            stream.sendWindow -= n;
            at += n;
        }
        return at;
    }
}
