package io.driveralias.agent.testing;

import java.nio.ByteBuffer;
import java.nio.channels.ByteChannel;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A socket for the codecs' fuzz tests: reads hand out {@code bytes} at most a few at a time, as a
 * busy socket may (at most 7, 4096 or 100,000 a read, one of them per channel), then the end of
 * the stream; writes are taken whole and dropped.
 */
public final class TrickleChannel implements ByteChannel {

    private final byte[] bytes;
    private final SplittableRandom random;
    private final int most;
    private int at;

    public TrickleChannel(byte[] bytes, SplittableRandom random) {
        this.bytes = bytes;
        this.random = random;
        this.most = SeededCases.oneOf(random, List.of(7, 4096, 100_000));
    }

    @Override
    public int read(ByteBuffer dst) {
        if (at == bytes.length) {
            return -1;
        }
        int n = Math.min(Math.min(dst.remaining(), bytes.length - at), 1 + random.nextInt(most));
        dst.put(bytes, at, n);
        at += n;
        return n;
    }

    @Override
    public int write(ByteBuffer src) {
        int n = src.remaining();
        src.position(src.limit());
        return n;
    }

    @Override
    public boolean isOpen() {
        return true;
    }

    @Override
    public void close() {
    }
}
