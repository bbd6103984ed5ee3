package io.driveralias.agent.ldcache;

import io.driveralias.agent.elf.ByteSource;
import io.driveralias.agent.fs.ErrnoException;
import java.io.IOException;

/** Little-endian, sequential output through one small buffer; also the buffer a verbatim copy goes through. */
final class CacheOutput {

    /** Where the bytes go: a new file, or memory in tests. */
    @FunctionalInterface
    interface Sink {
        void write(byte[] bytes, int length) throws IOException, ErrnoException;
    }

    private static final int BUFFER = 16 * 1024;

    private final Sink sink;
    private final byte[] buffer = new byte[BUFFER];
    private int used;
    private long written;

    CacheOutput(Sink sink) {
        this.sink = sink;
    }

    /** Bytes handed to this output so far, buffered or not. */
    long position() {
        return written + used;
    }

    CacheOutput u8(int value) throws IOException, ErrnoException {
        if (used == BUFFER) {
            flush();
        }
        buffer[used++] = (byte) value;
        return this;
    }

    CacheOutput i32(long value) throws IOException, ErrnoException {
        for (int i = 0; i < 4; i++) {
            u8((int) (value >>> (8 * i)));
        }
        return this;
    }

    CacheOutput i64(long value) throws IOException, ErrnoException {
        return i32(value).i32(value >>> 32);
    }

    CacheOutput bytes(byte[] bytes) throws IOException, ErrnoException {
        for (byte x : bytes) {
            u8(x);
        }
        return this;
    }

    CacheOutput zeros(long count) throws IOException, ErrnoException {
        for (long i = 0; i < count; i++) {
            u8(0);
        }
        return this;
    }

    /** Copies {@code length} bytes of {@code source} from {@code from}, a buffer at a time. */
    CacheOutput copy(ByteSource source, long from, long length) throws IOException, ErrnoException {
        flush();
        for (long done = 0; done < length; ) {
            int n = (int) Math.min(BUFFER, length - done);
            source.readFully(from + done, buffer, n);
            sink.write(buffer, n);
            written += n;
            done += n;
        }
        return this;
    }

    void flush() throws IOException, ErrnoException {
        if (used > 0) {
            sink.write(buffer, used);
            written += used;
            used = 0;
        }
    }
}
