package io.driveralias.agent.docker;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;

/** A response body read at most {@code limit} bytes far: past that, an error, not more memory. */
final class BoundedInput extends FilterInputStream {

    /** The body went past its bound: the answer is refused, the daemon was reachable. */
    static final class TooLarge extends IOException {
        TooLarge(String message) {
            super(message);
        }
    }

    private final long limit;
    private long read;

    BoundedInput(InputStream in, long limit) {
        super(in);
        this.limit = limit;
    }

    @Override
    public int read() throws IOException {
        int b = super.read();
        if (b >= 0) {
            count(1);
        }
        return b;
    }

    @Override
    public int read(byte[] buffer, int offset, int length) throws IOException {
        int n = super.read(buffer, offset, length);
        if (n > 0) {
            count(n);
        }
        return n;
    }

    @Override
    public long skip(long n) throws IOException {
        long skipped = super.skip(n);
        count(skipped);
        return skipped;
    }

    private void count(long n) throws IOException {
        read += n;
        if (read > limit) {
            throw new TooLarge("response larger than " + limit + " bytes");
        }
    }
}
