package io.driveralias.agent.grpc;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * What an HTTP/2 gRPC server sends, written as Go's server writes it, for the tests: SETTINGS,
 * header blocks HPACK-encoded with incremental indexing and Huffman-coded strings (as Go's
 * encoder does), split into CONTINUATION frames on request; DATA frames carrying gRPC's
 * length-prefixed messages; trailers; PING, GOAWAY, RST_STREAM, WINDOW_UPDATE.
 */
final class ServerFrames {

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    /** The encoder's dynamic table, newest first, as the decoder must mirror it. */
    private final List<String[]> table = new ArrayList<>();
    private int tableSize;
    private int tableMax = 4096;
    private boolean huffman = true;

    byte[] bytes() {
        return out.toByteArray();
    }

    ServerFrames huffman(boolean on) {
        huffman = on;
        return this;
    }

    ServerFrames frame(int type, int flags, int stream, byte[] payload) {
        ByteBuffer header = ByteBuffer.allocate(9);
        Frames.header(header, payload.length, type, flags, stream);
        out.writeBytes(header.array());
        out.writeBytes(payload);
        return this;
    }

    ServerFrames settings(int... pairs) {
        ByteBuffer b = ByteBuffer.allocate(pairs.length * 3);
        for (int i = 0; i < pairs.length; i += 2) {
            b.putShort((short) pairs[i]).putInt(pairs[i + 1]);
        }
        return frame(FrameReader.SETTINGS, 0, 0, b.array());
    }

    ServerFrames settingsAck() {
        return frame(FrameReader.SETTINGS, FrameReader.ACK, 0, new byte[0]);
    }

    ServerFrames ping(long data) {
        return frame(FrameReader.PING, 0, 0, ByteBuffer.allocate(8).putLong(data).array());
    }

    ServerFrames windowUpdate(int stream, int increment) {
        return frame(FrameReader.WINDOW_UPDATE, 0, stream, ByteBuffer.allocate(4).putInt(increment).array());
    }

    ServerFrames goAway(int last, int code) {
        return frame(FrameReader.GOAWAY, 0, 0, ByteBuffer.allocate(8).putInt(last).putInt(code).array());
    }

    ServerFrames reset(int stream, int code) {
        return frame(FrameReader.RST_STREAM, 0, stream, ByteBuffer.allocate(4).putInt(code).array());
    }

    /** The answer's headers: 200, application/grpc. */
    ServerFrames responseHeaders(int stream) {
        return headers(stream, false, 0, ":status", "200", "content-type", "application/grpc");
    }

    /** Trailers with {@code grpc-status} and, if not null, {@code grpc-message}. */
    ServerFrames trailers(int stream, int status, String message) {
        return message == null ? headers(stream, true, 0, "grpc-status", String.valueOf(status))
                : headers(stream, true, 0, "grpc-status", String.valueOf(status), "grpc-message", message);
    }

    /** A whole unary answer: headers, the message in DATA frames of at most {@code frameSize}, trailers OK. */
    ServerFrames unaryAnswer(int stream, byte[] message, int frameSize) {
        return responseHeaders(stream).messages(stream, frameSize, message).trailers(stream, 0, null);
    }

    /** gRPC messages, each behind its 5-byte prefix, cut into DATA frames of at most {@code frameSize}. */
    ServerFrames messages(int stream, int frameSize, byte[]... messages) {
        ByteArrayOutputStream data = new ByteArrayOutputStream();
        for (byte[] m : messages) {
            data.writeBytes(ByteBuffer.allocate(5).put((byte) 0).putInt(m.length).array());
            data.writeBytes(m);
        }
        byte[] all = data.toByteArray();
        for (int at = 0; at < all.length; at += frameSize) {
            byte[] chunk = java.util.Arrays.copyOfRange(all, at, Math.min(all.length, at + frameSize));
            frame(FrameReader.DATA, 0, stream, chunk);
        }
        return this;
    }

    /**
     * A header block of (name, value) pairs, END_STREAM if {@code end}, cut into a HEADERS frame
     * and CONTINUATIONs of at most {@code split} bytes (0: one frame). Each field indexed when the
     * table has it, else a literal with incremental indexing (the name indexed when it can be).
     */
    ServerFrames headers(int stream, boolean end, int split, String... pairs) {
        byte[] block = encode(pairs);
        int size = split <= 0 ? block.length : split;
        for (int at = 0; at == 0 || at < block.length; at += size) {
            byte[] chunk = java.util.Arrays.copyOfRange(block, at, Math.min(block.length, at + size));
            boolean last = at + size >= block.length;
            int flags = (last ? FrameReader.END_HEADERS : 0) | (at == 0 && end ? FrameReader.END_STREAM : 0);
            frame(at == 0 ? FrameReader.HEADERS : FrameReader.CONTINUATION, flags, stream, chunk);
        }
        return this;
    }

    /** A dynamic table size update at the start of the next block. */
    byte[] sizeUpdate(int size) {
        ByteBuffer b = ByteBuffer.allocate(8);
        Frames.integer(b, 0x20, 5, size);
        tableMax = size;
        evict(0);
        return java.util.Arrays.copyOf(b.array(), b.position());
    }

    byte[] encode(String... pairs) {
        ByteBuffer b = ByteBuffer.allocate(64 + 4 * pairs.length * 64 + java.util.Arrays.stream(pairs).mapToInt(String::length).sum() * 2);
        for (int i = 0; i < pairs.length; i += 2) {
            int full = index(pairs[i], pairs[i + 1]);
            if (full > 0) {
                Frames.integer(b, 0x80, 7, full);
                continue;
            }
            int name = index(pairs[i], null);
            Frames.integer(b, 0x40, 6, name);
            if (name == 0) {
                string(b, pairs[i]);
            }
            string(b, pairs[i + 1]);
            int entry = pairs[i].length() + pairs[i + 1].length() + 32;
            if (entry > tableMax) {
                table.clear();
                tableSize = 0;
            } else {
                evict(tableMax - entry);
                table.addFirst(new String[] {pairs[i], pairs[i + 1]});
                tableSize += entry;
            }
        }
        return java.util.Arrays.copyOf(b.array(), b.position());
    }

    private void evict(int to) {
        while (tableSize > to) {
            String[] oldest = table.removeLast();
            tableSize -= oldest[0].length() + oldest[1].length() + 32;
        }
    }

    /** The index of (name, value), or of the name alone when {@code value} is null; 0 when none. */
    private int index(String name, String value) {
        for (int i = 1; i <= HpackDecoder.STATIC_SIZE; i++) {
            String[] e = staticEntry(i);
            if (e[0].equals(name) && (value == null || e[1].equals(value))) {
                return i;
            }
        }
        for (int i = 0; i < table.size(); i++) {
            if (table.get(i)[0].equals(name) && (value == null || table.get(i)[1].equals(value))) {
                return HpackDecoder.STATIC_SIZE + 1 + i;
            }
        }
        return 0;
    }

    private static String[] staticEntry(int index) {
        String[][] got = new String[1][];
        try {
            // The decoder's own static table, read through a block of one indexed field.
            new HpackDecoder(0, 1 << 20).decode(new byte[] {(byte) (0x80 | index)}, 0, 1, (n, v) -> got[0] = new String[] {n, v});
        } catch (H2ProtocolException e) {
            throw new IllegalStateException(e);
        }
        return got[0];
    }

    private void string(ByteBuffer b, String s) {
        byte[] raw = s.getBytes(StandardCharsets.ISO_8859_1);
        if (!huffman) {
            Frames.integer(b, 0x00, 7, raw.length);
            b.put(raw);
            return;
        }
        byte[] coded = huffman(raw);
        Frames.integer(b, 0x80, 7, coded.length);
        b.put(coded);
    }

    /** RFC 7541 5.2: the codes of the bytes, then EOS's leading ones to the byte's end. */
    static byte[] huffman(byte[] raw) {
        ByteArrayOutputStream coded = new ByteArrayOutputStream();
        long bits = 0;
        int count = 0;
        for (byte x : raw) {
            int symbol = x & 0xff;
            bits = bits << Huffman.length(symbol) | Huffman.code(symbol);
            count += Huffman.length(symbol);
            while (count >= 8) {
                coded.write((int) (bits >>> (count - 8)));
                count -= 8;
            }
        }
        if (count > 0) {
            coded.write((int) (bits << (8 - count) | (0xff >>> count)));
        }
        return coded.toByteArray();
    }
}
