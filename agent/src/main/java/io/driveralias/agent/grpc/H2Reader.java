package io.driveralias.agent.grpc;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;

/**
 * The reading side of an {@link H2Connection}, on its one reading thread: every frame the server
 * sends (RFC 9113 6), checked, and turned into what the calls and the connection need: a stream's
 * headers (HPACK-decoded whatever the stream, since the server's table changes with every block)
 * and data, window updates both ways, SETTINGS and PING acknowledged, GOAWAY and RST_STREAM.
 * Anything malformed or over a bound is an {@link H2ProtocolException}, which ends the connection.
 */
final class H2Reader {

    private final H2Connection connection;
    private final FrameReader frames;
    private final HpackDecoder hpack = new HpackDecoder(H2Connection.HEADER_TABLE, H2Connection.MAX_HEADER_LIST);
    private final GrpcStream.Headers headers = new GrpcStream.Headers();
    /** A header block in the making: HEADERS and its CONTINUATIONs. */
    private final byte[] block = new byte[H2Connection.MAX_HEADER_LIST];
    private int blockLength;
    private int blockStream;
    private boolean blockEndsStream;
    private boolean continuing;
    /** What the server may still send on the connection, and what was read since the last WINDOW_UPDATE. */
    private long receiveWindow = H2Connection.CONNECTION_WINDOW;
    private int connectionOwed;
    /** This thread's own frames (acknowledgements, window updates, resets). */
    private final ByteBuffer control = ByteBuffer.allocate(64);
    private volatile long framesRead;

    H2Reader(H2Connection connection, FrameReader frames) {
        this.connection = connection;
        this.frames = frames;
    }

    /** How many frames were read: a call that saw none arrive in its whole deadline ends the connection. */
    long framesRead() {
        return framesRead;
    }

    /** Reads frames until the server closes the connection or it breaks; why it ended. */
    GrpcException run() {
        GrpcException why;
        try {
            while (frames.next()) {
                framesRead = framesRead + 1;
                frame();
            }
            why = new GrpcException(GrpcException.Code.UNAVAILABLE, "the server closed the connection", null);
        } catch (H2ProtocolException.Http1 e) {
            why = GrpcException.http1(e);
        } catch (H2ProtocolException e) {
            connection.sendControl(c -> Frames.goAway(c, 0, e.code()), control);
            why = new GrpcException(GrpcException.Code.UNAVAILABLE, "HTTP/2: " + e.getMessage(), e);
        } catch (IOException e) {
            why = new GrpcException(GrpcException.Code.UNAVAILABLE, "connection: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            why = new GrpcException(GrpcException.Code.INTERNAL, "the client failed reading: " + e, e);
        }
        return why;
    }

    private void frame() throws IOException {
        int type = frames.type();
        if (continuing && type != FrameReader.CONTINUATION) {
            throw H2ProtocolException.protocol("a frame of type " + type + " inside a header block");
        }
        switch (type) {
            case FrameReader.DATA -> data();
            case FrameReader.HEADERS, FrameReader.CONTINUATION -> headerBlock(type);
            case FrameReader.RST_STREAM -> reset();
            case FrameReader.SETTINGS -> settings();
            case FrameReader.PING -> ping();
            case FrameReader.GOAWAY -> goAway();
            case FrameReader.WINDOW_UPDATE -> windowUpdate();
            case FrameReader.PUSH_PROMISE -> throw H2ProtocolException.protocol("PUSH_PROMISE, though push is off");
            case FrameReader.PRIORITY -> {
                if (frames.length() != 5 || frames.stream() == 0) {
                    throw H2ProtocolException.protocol("a malformed PRIORITY frame");
                }
            }
            default -> {
                // RFC 9113 4.1: unknown frame types are ignored.
            }
        }
    }

    private void data() throws IOException {
        int length = frames.length();
        GrpcStream stream = connection.stream(frames.stream());
        int padding = padding(length);
        receiveWindow -= length;
        if (receiveWindow < 0) {
            throw new H2ProtocolException(H2ProtocolException.FLOW_CONTROL_ERROR, "the server sent past the connection's window");
        }
        connectionOwed += length;
        if (connectionOwed >= H2Connection.CONNECTION_WINDOW / 4) {
            int n = connectionOwed;
            connectionOwed = 0;
            receiveWindow += n;
            connection.sendControl(c -> Frames.windowUpdate(c, 0, n), control);
        }
        if (stream == null) {
            return;
        }
        if (stream.window() < length) {
            throw new H2ProtocolException(H2ProtocolException.FLOW_CONTROL_ERROR, "the server sent past stream " + stream.id + "'s window");
        }
        boolean end = frames.flag(FrameReader.END_STREAM);
        int start = frames.offset() + (frames.flag(FrameReader.PADDED) ? 1 : 0);
        int credit = stream.onData(frames.array(), start, length - padding - (frames.flag(FrameReader.PADDED) ? 1 : 0), end);
        if (credit < 0) {
            connection.cancel(stream, null);
        } else if (end) {
            connection.closed(stream);
        } else {
            stream.ungranted += credit + padding;
            if (stream.ungranted >= H2Connection.STREAM_WINDOW / 4) {
                int n = stream.ungranted;
                stream.ungranted = 0;
                stream.granted(n);
                connection.sendControl(c -> Frames.windowUpdate(c, stream.id, n), control);
            }
        }
    }

    /** A frame's padding length (PADDED flag), checked against its length. */
    private int padding(int length) throws H2ProtocolException {
        if (!frames.flag(FrameReader.PADDED)) {
            return 0;
        }
        int padding = length == 0 ? -1 : frames.array()[frames.offset()] & 0xff;
        if (padding < 0 || padding >= length) {
            throw H2ProtocolException.protocol("padding over the frame's length");
        }
        return padding;
    }

    private void headerBlock(int type) throws IOException {
        int length = frames.length();
        int from = frames.offset();
        if (type == FrameReader.HEADERS) {
            if (frames.stream() == 0) {
                throw H2ProtocolException.protocol("HEADERS on stream 0");
            }
            int padding = padding(length);
            int skip = (frames.flag(FrameReader.PADDED) ? 1 : 0) + (frames.flag(FrameReader.PRIORITY_FLAG) ? 5 : 0);
            if (skip + padding > length) {
                throw H2ProtocolException.protocol("a HEADERS frame shorter than its padding and priority");
            }
            from += skip;
            length -= skip + padding;
            blockLength = 0;
            blockStream = frames.stream();
            blockEndsStream = frames.flag(FrameReader.END_STREAM);
        } else if (!continuing || frames.stream() != blockStream) {
            throw H2ProtocolException.protocol("CONTINUATION without a header block in progress on its stream");
        }
        if (blockLength + length > block.length) {
            throw new H2ProtocolException(H2ProtocolException.ENHANCE_YOUR_CALM, "a header block over " + block.length + " bytes");
        }
        System.arraycopy(frames.array(), from, block, blockLength, length);
        blockLength += length;
        continuing = !frames.flag(FrameReader.END_HEADERS);
        if (continuing) {
            return;
        }
        // Decoded whatever the stream: the server's table changes with every block.
        hpack.decode(block, 0, blockLength, headers.reset());
        GrpcStream stream = connection.stream(blockStream);
        if (stream != null) {
            stream.onHeaders(headers, blockEndsStream);
            if (blockEndsStream) {
                connection.closed(stream);
            } else if (stream.isOver()) {
                connection.cancel(stream, null);
            }
        }
    }

    private void reset() throws IOException {
        if (frames.length() != 4 || frames.stream() == 0) {
            throw H2ProtocolException.protocol("a malformed RST_STREAM frame");
        }
        GrpcStream stream = connection.stream(frames.stream());
        if (stream != null) {
            long code = frames.u32(0);
            stream.fail(new GrpcException(resetCode(code), "the server reset the stream (HTTP/2 error " + code + ")", null));
            connection.closed(stream);
        }
    }

    /** gRPC's mapping of RST_STREAM's error codes. */
    private static GrpcException.Code resetCode(long code) {
        return switch ((int) code) {
            case H2ProtocolException.REFUSED_STREAM -> GrpcException.Code.UNAVAILABLE;
            case H2ProtocolException.CANCEL -> GrpcException.Code.CANCELLED;
            case H2ProtocolException.ENHANCE_YOUR_CALM -> GrpcException.Code.RESOURCE_EXHAUSTED;
            case H2ProtocolException.INADEQUATE_SECURITY -> GrpcException.Code.PERMISSION_DENIED;
            default -> GrpcException.Code.INTERNAL;
        };
    }

    private void settings() throws IOException {
        if (frames.stream() != 0 || frames.length() % 6 != 0 || frames.flag(FrameReader.ACK) && frames.length() != 0) {
            throw new H2ProtocolException(H2ProtocolException.FRAME_SIZE_ERROR, "a malformed SETTINGS frame");
        }
        if (frames.flag(FrameReader.ACK)) {
            return;
        }
        long[] pairs = new long[frames.length() / 3];
        for (int at = 0; at < frames.length(); at += 6) {
            pairs[at / 3] = (frames.array()[frames.offset() + at] & 0xff) << 8 | frames.array()[frames.offset() + at + 1] & 0xff;
            pairs[at / 3 + 1] = frames.u32(at + 2);
        }
        connection.peerSettings(pairs);
        connection.sendControl(Frames::settingsAck, control);
    }

    private void ping() throws IOException {
        if (frames.length() != 8 || frames.stream() != 0) {
            throw new H2ProtocolException(H2ProtocolException.FRAME_SIZE_ERROR, "a malformed PING frame");
        }
        if (!frames.flag(FrameReader.ACK)) {
            connection.sendControl(c -> Frames.pingAck(c, frames.array(), frames.offset()), control);
        }
    }

    /** The server stops taking streams: those after its last are refused (UNAVAILABLE), the others finish. */
    private void goAway() throws IOException {
        if (frames.length() < 8 || frames.stream() != 0) {
            throw H2ProtocolException.protocol("a malformed GOAWAY frame");
        }
        long last = frames.u32(0) & 0x7fff_ffffL;
        List<GrpcStream> refused = connection.goAway(last);
        GrpcException why = new GrpcException(GrpcException.Code.UNAVAILABLE, "the server is going away (GOAWAY, error "
                + frames.u32(4) + ")", null);
        refused.forEach(s -> s.fail(why));
    }

    private void windowUpdate() throws IOException {
        if (frames.length() != 4) {
            throw new H2ProtocolException(H2ProtocolException.FRAME_SIZE_ERROR, "a malformed WINDOW_UPDATE frame");
        }
        long increment = frames.u32(0) & 0x7fff_ffffL;
        if (increment == 0) {
            throw H2ProtocolException.protocol("a WINDOW_UPDATE of 0");
        }
        connection.windowUpdate(frames.stream(), increment);
    }
}
