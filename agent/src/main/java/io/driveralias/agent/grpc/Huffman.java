package io.driveralias.agent.grpc;

/**
 * HPACK's Huffman code (RFC 7541 Appendix B), decoding only: the client never Huffman-encodes
 * what it sends. The code is canonical (codes of one length are consecutive, in symbol order,
 * and follow on from the shorter ones), so the table below is only each symbol's code length; the
 * codes are derived from it. Decoding walks one bit at a time: header strings are short and rare
 * (a status, a content type, an error's message).
 */
final class Huffman {

    /** Code lengths in bits of symbols 0..255 and EOS (256), from RFC 7541 Appendix B. */
    private static final byte[] LENGTHS = {
        13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
        6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,
        13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,
        15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,
        20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
        22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
        26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
        20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
        30,
    };
    static final int EOS = 256;
    private static final int MAX_LENGTH = 30;

    /** The symbols ordered by (code length, symbol): canonical order. */
    private static final int[] SYMBOLS = new int[LENGTHS.length];
    /** For each length: the first code of that length, and where its symbols begin in {@link #SYMBOLS}. */
    private static final int[] FIRST_CODE = new int[MAX_LENGTH + 2];
    private static final int[] FIRST_INDEX = new int[MAX_LENGTH + 2];
    private static final int[] COUNT = new int[MAX_LENGTH + 2];

    static {
        for (byte length : LENGTHS) {
            COUNT[length]++;
        }
        int code = 0;
        int index = 0;
        for (int length = 1; length <= MAX_LENGTH; length++) {
            FIRST_CODE[length] = code;
            FIRST_INDEX[length] = index;
            code = (code + COUNT[length]) << 1;
            index += COUNT[length];
        }
        int[] next = FIRST_INDEX.clone();
        for (int symbol = 0; symbol < LENGTHS.length; symbol++) {
            SYMBOLS[next[LENGTHS[symbol]]++] = symbol;
        }
    }

    private Huffman() {
    }

    /** The code of {@code symbol}, right-aligned; its length is {@link #length}. For tests, which encode. */
    static int code(int symbol) {
        int length = LENGTHS[symbol];
        for (int i = FIRST_INDEX[length]; i < FIRST_INDEX[length] + COUNT[length]; i++) {
            if (SYMBOLS[i] == symbol) {
                return FIRST_CODE[length] + i - FIRST_INDEX[length];
            }
        }
        throw new IllegalArgumentException("symbol " + symbol);
    }

    static int length(int symbol) {
        return LENGTHS[symbol];
    }

    /**
     * Decodes {@code length} bytes at {@code offset} as ISO-8859-1 text. At most {@code max}
     * characters; the padding must be under 8 bits and EOS's prefix (all ones); EOS itself may not
     * appear (RFC 7541 5.2).
     */
    static String decode(byte[] in, int offset, int length, int max) throws H2ProtocolException {
        // Each symbol takes at least 5 bits: the output is at most 8/5 of the input.
        int most = Math.min(max, (int) (length * 8L / 5));
        char[] out = new char[most];
        int n = 0;
        int code = 0;
        int bits = 0;
        for (int i = offset; i < offset + length; i++) {
            int b = in[i];
            for (int k = 7; k >= 0; k--) {
                code = code << 1 | (b >>> k & 1);
                bits++;
                int index = code - FIRST_CODE[bits];
                if (index >= 0 && index < COUNT[bits]) {
                    int symbol = SYMBOLS[FIRST_INDEX[bits] + index];
                    if (symbol == EOS) {
                        throw new H2ProtocolException(H2ProtocolException.COMPRESSION_ERROR, "EOS in a Huffman-coded string");
                    }
                    if (n == most) {
                        throw new H2ProtocolException(H2ProtocolException.COMPRESSION_ERROR, "a header string over " + max + " characters");
                    }
                    out[n++] = (char) symbol;
                    code = 0;
                    bits = 0;
                } else if (bits == MAX_LENGTH) {
                    throw new H2ProtocolException(H2ProtocolException.COMPRESSION_ERROR, "not a Huffman code");
                }
            }
        }
        if (bits > 7 || code != (1 << bits) - 1) {
            throw new H2ProtocolException(H2ProtocolException.COMPRESSION_ERROR, "bad padding of a Huffman-coded string");
        }
        return new String(out, 0, n);
    }
}
