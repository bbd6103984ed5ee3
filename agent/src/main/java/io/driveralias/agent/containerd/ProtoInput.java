package io.driveralias.agent.containerd;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

/**
 * protobuf's wire format read as it streams, for messages whose size the agent does not choose
 * (a container's record holds its owner's environment and labels): a field is read only when
 * it is wanted and small enough, anything else is skipped without being held, and a nested
 * message can be handed on as a stream of its own (a container's OCI spec, to a JSON parser).
 * Every length is checked against what is left of the enclosing message. Malformed input is a
 * {@link ProtoException}.
 */
final class ProtoInput {

    static final int VARINT = 0;
    static final int FIXED64 = 1;
    static final int LENGTH_DELIMITED = 2;
    static final int FIXED32 = 5;

    /** Malformed protobuf, or a message over a bound. */
    static final class ProtoException extends IOException {
        ProtoException(String message) {
            super(message);
        }
    }

    private final InputStream in;
    /** Bytes left in the innermost message being read. */
    private long left;

    /** {@code size}: the whole message's length (what is left of the stream). */
    ProtoInput(InputStream in, long size) {
        this.in = in;
        this.left = size;
    }

    /** A reader of the whole of {@code in}, however long: gRPC bounds a message before the agent sees it. */
    static ProtoInput of(InputStream in) {
        return new ProtoInput(in, Long.MAX_VALUE);
    }

    /** The next field's tag (field number and wire type), or 0 at the end of the message. */
    int nextTag() throws IOException {
        if (left == 0) {
            return 0;
        }
        int first = in.read();
        if (first < 0) {
            if (left != Long.MAX_VALUE) {
                throw new ProtoException("message truncated");
            }
            left = 0;
            return 0;
        }
        consumed(1);
        long tag = varintFrom(first);
        if (tag == 0 || tag > Integer.MAX_VALUE) {
            throw new ProtoException("invalid tag " + tag);
        }
        return (int) tag;
    }

    static int field(int tag) {
        return tag >>> 3;
    }

    static int wireType(int tag) {
        return tag & 7;
    }

    long readVarint() throws IOException {
        return varintFrom(readByte());
    }

    /** The length of a length-delimited field, checked against what is left. */
    int readLength() throws IOException {
        long length = readVarint();
        if (length < 0 || length > left || length > Integer.MAX_VALUE) {
            throw new ProtoException("field length " + length + " exceeds its message");
        }
        return (int) length;
    }

    /** A string field of at most {@code max} bytes (UTF-8), else null, skipped unread. */
    String readString(int max) throws IOException {
        int length = readLength();
        if (length > max) {
            skip(length);
            return null;
        }
        return new String(readBytes(length), StandardCharsets.UTF_8);
    }

    /** A bytes field of at most {@code max} bytes, else null, skipped unread. */
    byte[] readSmallBytes(int max) throws IOException {
        int length = readLength();
        if (length > max) {
            skip(length);
            return null;
        }
        return readBytes(length);
    }

    /**
     * Enters an embedded message: until {@link #leave}, the reader sees only its fields.
     * Returns what is left of the outer message after it, for {@code leave}.
     */
    long enter() throws IOException {
        int length = readLength();
        long outer = left == Long.MAX_VALUE ? Long.MAX_VALUE : left - length;
        left = length;
        return outer;
    }

    /** Skips what is left of the embedded message and returns to the one around it. */
    void leave(long outer) throws IOException {
        skip(left);
        left = outer;
    }

    /**
     * A length-delimited field as a stream of its own, to be read by another parser. Whatever
     * the reader leaves unread is skipped when the stream is closed.
     */
    InputStream embedded() throws IOException {
        int length = readLength();
        consumed(length);
        return new Embedded(length);
    }

    /** Skips a field's value of any wire type. */
    void skipField(int tag) throws IOException {
        switch (wireType(tag)) {
            case VARINT -> readVarint();
            case FIXED64 -> skip(8);
            case LENGTH_DELIMITED -> skip(readLength());
            case FIXED32 -> skip(4);
            default -> throw new ProtoException("unsupported wire type " + wireType(tag));
        }
    }

    private long varintFrom(int first) throws IOException {
        long value = first & 0x7f;
        int b = first;
        for (int shift = 7; (b & 0x80) != 0; shift += 7) {
            if (shift > 63) {
                throw new ProtoException("varint too long");
            }
            b = readByte();
            value |= (long) (b & 0x7f) << shift;
        }
        return value;
    }

    private int readByte() throws IOException {
        if (left == 0) {
            throw new ProtoException("message truncated");
        }
        int b = in.read();
        if (b < 0) {
            throw new ProtoException("message truncated");
        }
        if (left != Long.MAX_VALUE) {
            left--;
        }
        return b;
    }

    private byte[] readBytes(int length) throws IOException {
        byte[] bytes = in.readNBytes(length);
        if (bytes.length != length) {
            throw new ProtoException("message truncated");
        }
        consumed(length);
        return bytes;
    }

    private void skip(long n) throws IOException {
        if (n > left) {
            throw new ProtoException("field length " + n + " exceeds its message");
        }
        in.skipNBytes(n);
        consumed(n);
    }

    private void consumed(long n) {
        if (left != Long.MAX_VALUE) {
            left -= n;
        }
    }

    /** A field's bytes as a stream, bounded to the field. */
    private final class Embedded extends InputStream {
        private long remaining;

        Embedded(long length) {
            this.remaining = length;
        }

        @Override
        public int read() throws IOException {
            if (remaining == 0) {
                return -1;
            }
            int b = in.read();
            if (b < 0) {
                throw new ProtoException("message truncated");
            }
            remaining--;
            return b;
        }

        @Override
        public int read(byte[] buffer, int offset, int length) throws IOException {
            if (remaining == 0) {
                return -1;
            }
            int n = in.read(buffer, offset, (int) Math.min(length, remaining));
            if (n < 0) {
                throw new ProtoException("message truncated");
            }
            remaining -= n;
            return n;
        }

        @Override
        public int available() throws IOException {
            return (int) Math.min(remaining, in.available());
        }

        @Override
        public void close() throws IOException {
            in.skipNBytes(remaining);
            remaining = 0;
        }
    }
}
