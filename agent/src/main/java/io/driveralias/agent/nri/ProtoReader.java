package io.driveralias.agent.nri;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * The protocol-buffer wire format read in place from a buffer, for messages whose content a
 * hostile pod steers: a field is skipped by moving an index, nothing is copied unless a caller
 * asks for a string it decided to keep, and every length is checked against what is left of the
 * enclosing message. A length-delimited field is handed out as a span ({@link #span()}: its
 * offset and length packed in a long), so that looking at one costs no allocation. Groups (wire
 * types 3 and 4) are refused: no NRI or ttrpc message has any, and skipping them would recurse.
 * Every malformation is an {@link NriProtocolException}.
 */
final class ProtoReader {

    static final int VARINT = 0;
    static final int FIXED64 = 1;
    static final int LENGTH = 2;
    static final int FIXED32 = 5;

    private ByteBuffer buffer;
    private int start;
    private int limit;
    private int position;

    /** The message held in {@code buffer} between {@code from} and {@code to} (absolute indexes). */
    ProtoReader(ByteBuffer buffer, int from, int to) {
        if (from < 0 || to < from || to > buffer.capacity()) {
            throw new IllegalArgumentException("bad bounds " + from + ".." + to);
        }
        this.buffer = buffer;
        this.start = from;
        this.position = from;
        this.limit = to;
    }

    /** Back to the message's first field, for a second look. */
    void rewind() {
        position = start;
    }

    boolean hasMore() {
        return position < limit;
    }

    /** The next field's tag; its number is {@code tag >>> 3}, its wire type {@code tag & 7}. */
    int tag() throws NriProtocolException {
        long tag = varint();
        if (tag >>> 32 != 0 || tag >>> 3 == 0) {
            throw new NriProtocolException("bad field tag " + Long.toUnsignedString(tag));
        }
        int wireType = (int) tag & 7;
        if (wireType != VARINT && wireType != FIXED64 && wireType != LENGTH && wireType != FIXED32) {
            throw new NriProtocolException("unsupported wire type " + wireType + " (field " + (tag >>> 3) + ")");
        }
        return (int) tag;
    }

    static int number(int tag) {
        return tag >>> 3;
    }

    static int wireType(int tag) {
        return tag & 7;
    }

    long varint() throws NriProtocolException {
        long value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (position >= limit) {
                throw new NriProtocolException("varint runs past its message");
            }
            byte b = buffer.get(position++);
            value |= (long) (b & 0x7f) << shift;
            if (b >= 0) {
                return value;
            }
        }
        throw new NriProtocolException("varint longer than 10 bytes");
    }

    /** A varint field's value as the runtime's {@code int64}/{@code uint32}/enum fields use it. */
    long varintOf(int tag) throws NriProtocolException {
        expect(tag, VARINT);
        return varint();
    }

    /** The next length-delimited field's bytes as a span, the reader moved past them. */
    long span(int tag) throws NriProtocolException {
        expect(tag, LENGTH);
        long length = varint();
        if (length < 0 || length > limit - position) {
            throw new NriProtocolException("field " + number(tag) + " of " + Long.toUnsignedString(length)
                    + " bytes runs past its message (" + (limit - position) + " left)");
        }
        int offset = position;
        position += (int) length;
        return ((long) offset << 32) | length;
    }

    static int offset(long span) {
        return (int) (span >>> 32);
    }

    static int length(long span) {
        return (int) span;
    }

    /** A reader of the message in {@code span}. */
    ProtoReader reader(long span) {
        return new ProtoReader(buffer, offset(span), offset(span) + length(span));
    }

    /**
     * This reader, moved onto the message in {@code outer}'s {@code span}: one reader reused for
     * every entry of a list, so that ten thousand entries leave no garbage behind.
     */
    ProtoReader moveTo(ProtoReader outer, long span) {
        buffer = outer.buffer;
        start = offset(span);
        position = start;
        limit = start + length(span);
        return this;
    }

    /** Whether the bytes of {@code span} start with {@code prefix}, compared in place. */
    boolean startsWith(long span, byte[] prefix) {
        if (length(span) < prefix.length) {
            return false;
        }
        int at = offset(span);
        for (int i = 0; i < prefix.length; i++) {
            if (buffer.get(at + i) != prefix[i]) {
                return false;
            }
        }
        return true;
    }

    /** The {@code i}th byte of {@code span}; the caller keeps {@code i} below its length. */
    byte byteAt(long span, int i) {
        return buffer.get(offset(span) + i);
    }

    /** Whether every byte of {@code span} is ASCII (what decodes to a string of one byte a character). */
    boolean isAscii(long span) {
        int at = offset(span);
        int end = at + length(span);
        for (int i = at; i < end; i++) {
            if (buffer.get(i) < 0) {
                return false;
            }
        }
        return true;
    }

    /** Whether the bytes of {@code span} are exactly {@code text}. */
    boolean equalTo(long span, byte[] text) {
        return length(span) == text.length && startsWith(span, text);
    }

    /** The bytes of {@code span} as UTF-8 text (malformed sequences replaced); the caller bounded its length. */
    String string(long span) {
        byte[] bytes = new byte[length(span)];
        buffer.get(offset(span), bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    /** Moves past a field the caller does not read. */
    void skip(int tag) throws NriProtocolException {
        switch (wireType(tag)) {
            case VARINT -> varint();
            case FIXED64 -> advance(8);
            case FIXED32 -> advance(4);
            case LENGTH -> span(tag);
            default -> throw new NriProtocolException("unsupported wire type " + wireType(tag));
        }
    }

    private void advance(int bytes) throws NriProtocolException {
        if (bytes > limit - position) {
            throw new NriProtocolException("fixed-size field runs past its message");
        }
        position += bytes;
    }

    private static void expect(int tag, int wireType) throws NriProtocolException {
        if (wireType(tag) != wireType) {
            throw new NriProtocolException("field " + number(tag) + " has wire type " + wireType(tag) + ", expected " + wireType);
        }
    }
}
