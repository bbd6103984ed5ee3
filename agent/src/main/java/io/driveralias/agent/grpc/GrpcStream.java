package io.driveralias.agent.grpc;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;

/**
 * One call's answer as it arrives on an HTTP/2 stream: its headers, its gRPC messages (a 5-byte
 * prefix, flag and length, then the message; RFC-less "gRPC over HTTP/2"), its trailers with
 * {@code grpc-status}. The connection's reading thread feeds it ({@link #onHeaders},
 * {@link #onData}, {@link #fail}); the calling thread waits for it ({@link #awaitDone},
 * {@link #take}). A message's buffer grows as its bytes arrive, never by what its prefix claims,
 * and a message over the call's bound fails the call ({@code RESOURCE_EXHAUSTED}).
 *
 * <p>Flow control: a unary call's window is given back as its bytes arrive (its one message is
 * bounded); a streaming call's only while the messages waiting to be taken hold at most
 * {@link #HELD}, so a slow reader holds up the server, not the agent's memory.
 */
final class GrpcStream {

    static final int PREFIX = 5;
    /** What a streaming call may hold in messages not taken yet before its window stops being given back. */
    static final int HELD = 128 << 10;
    /** {@link #take}'s answer at the end of a stream that ended well. */
    static final byte[] END = new byte[0];

    final int id;
    private final boolean streaming;
    private final int maxMessage;

    // The reading thread's alone.
    private boolean headersSeen;
    private final byte[] prefix = new byte[PREFIX];
    private int prefixFilled;
    private byte[] message;
    private int messageLength;
    private int filled;

    // Shared: under this object's monitor.
    private final ArrayDeque<byte[]> messages = new ArrayDeque<>();
    private long held;
    private int owed;
    private boolean done;
    private GrpcException failure;
    /** How much the server may still send on this stream (its receive window as the server counts it). */
    private int window;
    /** How much the client may still send (the server's window for this stream); under the connection's state lock. */
    int sendWindow;
    /** Window the reading thread owes the server, given back in one WINDOW_UPDATE once it is worth one; that thread's alone. */
    int ungranted;

    GrpcStream(int id, boolean streaming, int maxMessage, int window, int sendWindow) {
        this.id = id;
        this.streaming = streaming;
        this.maxMessage = maxMessage;
        this.window = window;
        this.sendWindow = sendWindow;
    }

    /** The headers of one block, as the call needs them; the others are dropped. */
    static final class Headers implements HpackDecoder.Sink {
        String status;
        String contentType;
        String grpcStatus;
        String grpcMessage;

        Headers reset() {
            status = contentType = grpcStatus = grpcMessage = null;
            return this;
        }

        @Override
        public void header(String name, String value) {
            switch (name) {
                case ":status" -> status = value;
                case "content-type" -> contentType = value;
                case "grpc-status" -> grpcStatus = value;
                case "grpc-message" -> grpcMessage = value;
                default -> {
                    // not the client's concern
                }
            }
        }
    }

    /** A header block; {@code end}: it ends the stream (trailers, or a trailers-only answer). */
    synchronized void onHeaders(Headers h, boolean end) {
        if (isOver()) {
            return;
        }
        if (!headersSeen) {
            headersSeen = true;
            if (h.status == null || !h.status.equals("200")) {
                finish(new GrpcException(httpStatusCode(h.status), "HTTP status " + h.status, null));
                return;
            }
            if (h.contentType == null || !h.contentType.startsWith("application/grpc")) {
                finish(new GrpcException(GrpcException.Code.UNKNOWN, "content-type " + h.contentType + ", not gRPC's", null));
                return;
            }
            if (!end) {
                return;
            }
        } else if (!end) {
            finish(new GrpcException(GrpcException.Code.INTERNAL, "a second header block that does not end the stream", null));
            return;
        }
        trailers(h);
    }

    private void trailers(Headers h) {
        if (h.grpcStatus == null || !h.grpcStatus.matches("[0-9]{1,3}")) {
            finish(new GrpcException(GrpcException.Code.INTERNAL, "no grpc-status in the trailers", null));
            return;
        }
        GrpcException.Code code = GrpcException.Code.of(Integer.parseInt(h.grpcStatus));
        if (code != GrpcException.Code.OK) {
            finish(new GrpcException(code, h.grpcMessage == null ? "" : percentDecoded(h.grpcMessage), null));
        } else if (filled != 0 || prefixFilled != 0) {
            finish(new GrpcException(GrpcException.Code.INTERNAL, "the stream ended inside a message", null));
        } else if (!streaming && messages.size() != 1) {
            finish(new GrpcException(GrpcException.Code.INTERNAL, messages.size() + " messages in a unary answer", null));
        } else {
            done = true;
            notifyAll();
        }
    }

    /**
     * DATA of {@code length} bytes; {@code end}: END_STREAM, which must come with trailers, not
     * data. Returns how much of the stream's window to give back now; negative when the call is
     * to be reset (it failed here: an answer over its bound, compressed, or malformed).
     */
    synchronized int onData(byte[] in, int offset, int length, boolean end) {
        window -= length;
        if (isOver()) {
            return 0;
        }
        if (!headersSeen) {
            finish(new GrpcException(GrpcException.Code.INTERNAL, "data before headers", null));
            return -1;
        }
        int at = offset;
        int left = length;
        while (left > 0) {
            if (prefixFilled < PREFIX) {
                int n = Math.min(left, PREFIX - prefixFilled);
                System.arraycopy(in, at, prefix, prefixFilled, n);
                prefixFilled += n;
                at += n;
                left -= n;
                if (prefixFilled == PREFIX && !begin()) {
                    return -1;
                }
            } else {
                int n = Math.min(left, messageLength - filled);
                if (filled + n > message.length) {
                    message = java.util.Arrays.copyOf(message, Math.min(messageLength, Math.max(filled + n, message.length * 2)));
                }
                System.arraycopy(in, at, message, filled, n);
                filled += n;
                at += n;
                left -= n;
                if (filled == messageLength) {
                    complete();
                }
            }
        }
        if (end) {
            finish(new GrpcException(GrpcException.Code.INTERNAL, "the stream ended without trailers", null));
            return 0;
        }
        if (streaming && held > HELD) {
            owed += length;
            return 0;
        }
        return length;
    }

    /** A message's prefix is read: its buffer, or the call's failure. */
    private boolean begin() {
        long length = (prefix[1] & 0xffL) << 24 | (prefix[2] & 0xffL) << 16 | (prefix[3] & 0xffL) << 8 | prefix[4] & 0xffL;
        if (prefix[0] != 0) {
            finish(new GrpcException(GrpcException.Code.INTERNAL, "a compressed or unknown message (flag " + prefix[0] + ")", null));
            return false;
        }
        if (length > maxMessage) {
            finish(new GrpcException(GrpcException.Code.RESOURCE_EXHAUSTED, "a message of " + length + " bytes over the bound of "
                    + maxMessage, null));
            return false;
        }
        messageLength = (int) length;
        message = new byte[Math.min(messageLength, 4096)];
        filled = 0;
        if (messageLength == 0) {
            complete();
        }
        return true;
    }

    private void complete() {
        messages.add(message.length == messageLength ? message : java.util.Arrays.copyOf(message, messageLength));
        held += PREFIX + messageLength;
        message = null;
        prefixFilled = 0;
        filled = 0;
        notifyAll();
    }

    /** The window given back: added to what the server may send. */
    synchronized void granted(int n) {
        window += n;
    }

    synchronized int window() {
        return window;
    }

    /** Ends the call with {@code why} unless it is over already. */
    synchronized void fail(GrpcException why) {
        if (!isOver()) {
            finish(why);
        }
    }

    private void finish(GrpcException why) {
        failure = why;
        message = null;
        notifyAll();
    }

    synchronized boolean isOver() {
        return done || failure != null;
    }

    /** Waits until the call is over or the deadline ({@link System#nanoTime()}) passes; whether it is over. */
    synchronized boolean awaitDone(long deadline) throws InterruptedException {
        while (!isOver()) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            wait(left / 1_000_000, (int) (left % 1_000_000));
        }
        return true;
    }

    /** A unary call's answer, once over: its message, or its failure. */
    synchronized byte[] result() throws GrpcException {
        if (failure != null) {
            throw failure;
        }
        return messages.peek();
    }

    /**
     * A streaming call's next message (waiting until the deadline: null then), {@link #END} after
     * the last of a call that ended well; its failure after the messages before it. {@code credit}
     * receives the window to give back, if any, at [0].
     */
    synchronized byte[] take(long deadline, int[] credit) throws GrpcException, InterruptedException {
        while (messages.isEmpty() && !isOver()) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return null;
            }
            wait(left / 1_000_000, (int) (left % 1_000_000));
        }
        byte[] next = messages.poll();
        if (next == null) {
            if (failure != null) {
                throw failure;
            }
            return END;
        }
        held -= PREFIX + next.length;
        if (held <= HELD && owed > 0 && !isOver()) {
            credit[0] = owed;
            owed = 0;
        }
        return next;
    }

    /** gRPC's mapping of a non-200 HTTP status, for an answer that is not gRPC's. */
    private static GrpcException.Code httpStatusCode(String status) {
        return switch (String.valueOf(status)) {
            case "400" -> GrpcException.Code.INTERNAL;
            case "401" -> GrpcException.Code.UNAUTHENTICATED;
            case "403" -> GrpcException.Code.PERMISSION_DENIED;
            case "404" -> GrpcException.Code.UNIMPLEMENTED;
            case "429", "502", "503", "504" -> GrpcException.Code.UNAVAILABLE;
            default -> GrpcException.Code.UNKNOWN;
        };
    }

    /** {@code grpc-message} is percent-encoded UTF-8. */
    static String percentDecoded(String s) {
        if (s.indexOf('%') < 0) {
            return s;
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '%' && i + 2 < s.length() && Character.digit(s.charAt(i + 1), 16) >= 0 && Character.digit(s.charAt(i + 2), 16) >= 0) {
                out.write(Character.digit(s.charAt(i + 1), 16) << 4 | Character.digit(s.charAt(i + 2), 16));
                i += 2;
            } else {
                out.write(c);
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }
}
