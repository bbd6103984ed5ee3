package io.driveralias.agent.json;

import java.io.IOException;
import java.io.InputStream;

/**
 * JSON text with every string (member names included) cut to at most {@code cap} bytes, as it
 * streams: a JSON parser reading through it never holds more of one string than that, whatever
 * the document holds (an environment value of 4 MB, a label key of 1 MB). A cut string ends with
 * {@link #MARK}, so a reader that keeps a string can tell it was longer than it may be and
 * refuse it; a reader that only skips a string pays nothing. The cut falls on a character
 * boundary (never inside an escape or a UTF-8 sequence), so the result is valid JSON whenever the
 * input is. Everything outside strings passes unchanged; malformed input stays malformed, for the
 * parser to reject.
 */
public final class CappedStrings extends InputStream {

    /** The last character of a string that was cut: the JSON escape backslash-u-0000 (NUL), which no real name or value the agent keeps holds. */
    public static final char MARK = '\0';
    private static final byte[] CUT = {'\\', 'u', '0', '0', '0', '0', '"'};

    private enum State { OUTSIDE, STRING, ESCAPE, UNICODE, SKIP, SKIP_ESCAPE }

    private final InputStream in;
    private final int cap;
    private final byte[] input = new byte[8192];
    private int inputPos;
    private int inputEnd;
    private State state = State.OUTSIDE;
    private int length;
    /** Hex digits of a {@code \\uXXXX} escape still to come: never cut between them. */
    private int digits;
    /** Bytes of {@link #CUT} still to hand out. */
    private int pendingFrom = CUT.length;
    private long cuts;

    public CappedStrings(InputStream in, int cap) {
        if (cap < 1) {
            throw new IllegalArgumentException("cap " + cap);
        }
        this.in = in;
        this.cap = cap;
    }

    /** Whether {@code text}, read through a {@code CappedStrings}, was cut. */
    public static boolean isCut(String text) {
        return !text.isEmpty() && text.charAt(text.length() - 1) == MARK;
    }

    /** How many strings were cut so far. */
    public long cuts() {
        return cuts;
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        int n = read(one, 0, 1);
        return n < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] out, int offset, int len) throws IOException {
        if (len == 0) {
            return 0;
        }
        int written = 0;
        while (written < len) {
            if (pendingFrom < CUT.length) {
                out[offset + written++] = CUT[pendingFrom++];
                continue;
            }
            if (inputPos == inputEnd) {
                if (written > 0 && in.available() <= 0) {
                    // Hand out what is there rather than wait for more.
                    return written;
                }
                int n = in.read(input, 0, input.length);
                if (n < 0) {
                    return written == 0 ? -1 : written;
                }
                inputPos = 0;
                inputEnd = n;
                continue;
            }
            byte b = input[inputPos++];
            if (pass(b)) {
                out[offset + written++] = b;
            }
        }
        return written;
    }

    /** Moves the lexical state over one byte; true if the byte is handed on. */
    private boolean pass(byte b) {
        switch (state) {
            case OUTSIDE -> {
                if (b == '"') {
                    state = State.STRING;
                    length = 0;
                }
                return true;
            }
            case STRING -> {
                if (b == '"') {
                    state = State.OUTSIDE;
                    return true;
                }
                // A byte that starts a character (not a UTF-8 continuation) past the cap: cut here.
                if (length >= cap && (b & 0xC0) != 0x80) {
                    cuts++;
                    state = b == '\\' ? State.SKIP_ESCAPE : State.SKIP;
                    return false;
                }
                length++;
                if (b == '\\') {
                    state = State.ESCAPE;
                }
                return true;
            }
            case ESCAPE -> {
                length++;
                if (b == 'u') {
                    digits = 4;
                    state = State.UNICODE;
                } else {
                    state = State.STRING;
                }
                return true;
            }
            case UNICODE -> {
                length++;
                if (--digits == 0) {
                    state = State.STRING;
                }
                return true;
            }
            case SKIP -> {
                if (b == '"') {
                    state = State.OUTSIDE;
                    pendingFrom = 0;
                } else if (b == '\\') {
                    state = State.SKIP_ESCAPE;
                }
                return false;
            }
            case SKIP_ESCAPE -> {
                state = State.SKIP;
                return false;
            }
            default -> throw new IllegalStateException(state.name());
        }
    }

    @Override
    public int available() throws IOException {
        return (CUT.length - pendingFrom) + (inputEnd - inputPos);
    }

    @Override
    public void close() throws IOException {
        in.close();
    }
}
