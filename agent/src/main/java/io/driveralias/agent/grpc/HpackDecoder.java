package io.driveralias.agent.grpc;

import java.nio.charset.StandardCharsets;

/**
 * HPACK (RFC 7541) header blocks as a server sends them, decoded whole: the static table, the
 * dynamic table with its size updates and evictions, Huffman-coded or plain strings. Go's HTTP/2
 * server (containerd's gRPC) indexes most of what it sends, so the dynamic table is kept as the
 * server keeps it even for the headers the client drops. Bounded: the table by the size the
 * client advertised ({@code SETTINGS_HEADER_TABLE_SIZE}), a header list by the size it advertised
 * ({@code SETTINGS_MAX_HEADER_LIST_SIZE}, each field counted as name + value + 32, RFC 9113 6.5.2),
 * every length by what is left of the block. Anything else is an {@link H2ProtocolException}
 * ({@code COMPRESSION_ERROR}), after which the table no longer matches the server's and the
 * connection ends.
 */
final class HpackDecoder {

    /** Receives each header of a block, in order. */
    @FunctionalInterface
    interface Sink {
        void header(String name, String value) throws H2ProtocolException;
    }

    /** RFC 7541 Appendix A: names and values, index 1 at [0]. */
    private static final String[][] STATIC = {
        {":authority", ""}, {":method", "GET"}, {":method", "POST"}, {":path", "/"}, {":path", "/index.html"},
        {":scheme", "http"}, {":scheme", "https"}, {":status", "200"}, {":status", "204"}, {":status", "206"},
        {":status", "304"}, {":status", "400"}, {":status", "404"}, {":status", "500"}, {"accept-charset", ""},
        {"accept-encoding", "gzip, deflate"}, {"accept-language", ""}, {"accept-ranges", ""}, {"accept", ""},
        {"access-control-allow-origin", ""}, {"age", ""}, {"allow", ""}, {"authorization", ""}, {"cache-control", ""},
        {"content-disposition", ""}, {"content-encoding", ""}, {"content-language", ""}, {"content-length", ""},
        {"content-location", ""}, {"content-range", ""}, {"content-type", ""}, {"cookie", ""}, {"date", ""}, {"etag", ""},
        {"expect", ""}, {"expires", ""}, {"from", ""}, {"host", ""}, {"if-match", ""}, {"if-modified-since", ""},
        {"if-none-match", ""}, {"if-range", ""}, {"if-unmodified-since", ""}, {"last-modified", ""}, {"link", ""},
        {"location", ""}, {"max-forwards", ""}, {"proxy-authenticate", ""}, {"proxy-authorization", ""}, {"range", ""},
        {"referer", ""}, {"refresh", ""}, {"retry-after", ""}, {"server", ""}, {"set-cookie", ""},
        {"strict-transport-security", ""}, {"transfer-encoding", ""}, {"user-agent", ""}, {"vary", ""}, {"via", ""},
        {"www-authenticate", ""},
    };
    static final int STATIC_SIZE = STATIC.length;
    /** RFC 7541 4.1: an entry's size is its name's and value's lengths plus 32. */
    static final int ENTRY_OVERHEAD = 32;

    private final int maxTableSize;
    private final int maxHeaderList;
    /** The dynamic table, newest first: a ring of at most maxTableSize / 32 entries. */
    private final String[] names;
    private final String[] values;
    private int newest;
    private int count;
    private int tableSize;
    private int capacity;

    private byte[] in;
    private int pos;
    private int end;

    HpackDecoder(int maxTableSize, int maxHeaderList) {
        this.maxTableSize = maxTableSize;
        this.maxHeaderList = maxHeaderList;
        this.capacity = maxTableSize;
        int slots = maxTableSize / ENTRY_OVERHEAD + 1;
        this.names = new String[slots];
        this.values = new String[slots];
    }

    /** Decodes one complete header block (a HEADERS frame's fragments, CONTINUATIONs joined). */
    void decode(byte[] block, int offset, int length, Sink sink) throws H2ProtocolException {
        this.in = block;
        this.pos = offset;
        this.end = offset + length;
        long listSize = 0;
        boolean fieldSeen = false;
        while (pos < end) {
            int b = in[pos] & 0xff;
            String name;
            String value;
            if ((b & 0x80) != 0) {
                int index = integer(7);
                name = name(index);
                value = index <= STATIC_SIZE ? STATIC[index - 1][1] : values[slot(index - STATIC_SIZE - 1)];
            } else if ((b & 0xe0) == 0x20) {
                // A size update may only come before the block's first field (RFC 7541 4.2).
                if (fieldSeen) {
                    throw error("a dynamic table size update after a header field");
                }
                int size = integer(5);
                if (size > maxTableSize) {
                    throw error("a dynamic table size of " + size + " over the " + maxTableSize + " advertised");
                }
                capacity = size;
                evictTo(capacity);
                continue;
            } else {
                boolean indexing = (b & 0xc0) == 0x40;
                int index = integer(indexing ? 6 : 4);
                name = index == 0 ? string() : name(index);
                value = string();
                if (indexing) {
                    add(name, value);
                }
            }
            fieldSeen = true;
            listSize += name.length() + value.length() + ENTRY_OVERHEAD;
            if (listSize > maxHeaderList) {
                throw error("a header list over the " + maxHeaderList + " bytes advertised");
            }
            sink.header(name, value);
        }
        this.in = null;
    }

    /** The size of the dynamic table as RFC 7541 counts it. */
    int tableSize() {
        return tableSize;
    }

    /** Entry {@code i} of the dynamic table, 0 the newest, as {name, value}: for tests. */
    String[] entry(int i) {
        return i < count ? new String[] {names[slot(i)], values[slot(i)]} : null;
    }

    private String name(int index) throws H2ProtocolException {
        if (index <= 0 || index > STATIC_SIZE + count) {
            throw error("header index " + index + " outside the tables (" + STATIC_SIZE + " + " + count + ")");
        }
        return index <= STATIC_SIZE ? STATIC[index - 1][0] : names[slot(index - STATIC_SIZE - 1)];
    }

    private int slot(int age) {
        return (newest + age) % names.length;
    }

    /** Adds an entry, evicting the oldest to make room; one larger than the table empties it (RFC 7541 4.4). */
    private void add(String name, String value) {
        long size = (long) name.length() + value.length() + ENTRY_OVERHEAD;
        if (size > capacity) {
            evictTo(0);
            return;
        }
        evictTo(capacity - (int) size);
        newest = (newest - 1 + names.length) % names.length;
        names[newest] = name;
        values[newest] = value;
        count++;
        tableSize += (int) size;
    }

    private void evictTo(int size) {
        while (tableSize > size) {
            int oldest = slot(count - 1);
            tableSize -= names[oldest].length() + values[oldest].length() + ENTRY_OVERHEAD;
            names[oldest] = null;
            values[oldest] = null;
            count--;
        }
    }

    /** An integer with an N-bit prefix (RFC 7541 5.1), at most 2^31 - 1. */
    private int integer(int prefixBits) throws H2ProtocolException {
        int mask = (1 << prefixBits) - 1;
        long value = in[pos++] & mask;
        if (value < mask) {
            return (int) value;
        }
        for (int shift = 0; ; shift += 7) {
            if (pos == end) {
                throw error("a header block ends inside an integer");
            }
            int b = in[pos++] & 0xff;
            value += (long) (b & 0x7f) << shift;
            if (value > Integer.MAX_VALUE) {
                throw error("an integer over 2^31 - 1 in a header block");
            }
            if ((b & 0x80) == 0) {
                return (int) value;
            }
        }
    }

    /** A string literal (RFC 7541 5.2), plain or Huffman-coded, as ISO-8859-1 text. */
    private String string() throws H2ProtocolException {
        if (pos == end) {
            throw error("a header block ends before a string");
        }
        boolean huffman = (in[pos] & 0x80) != 0;
        int length = integer(7);
        if (length > end - pos) {
            throw error("a string of " + length + " bytes with " + (end - pos) + " left in the header block");
        }
        int at = pos;
        pos += length;
        if (huffman) {
            return Huffman.decode(in, at, length, maxHeaderList);
        }
        if (length > maxHeaderList) {
            throw error("a header string over " + maxHeaderList + " bytes");
        }
        return new String(in, at, length, StandardCharsets.ISO_8859_1);
    }

    private static H2ProtocolException error(String message) {
        return new H2ProtocolException(H2ProtocolException.COMPRESSION_ERROR, message);
    }
}
