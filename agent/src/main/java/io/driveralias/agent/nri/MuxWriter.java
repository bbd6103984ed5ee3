package io.driveralias.agent.nri;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.WritableByteChannel;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The writing half of NRI's socket: a ttrpc message (10-byte header, then the message) cut into
 * frames of at most {@link #MAX_CHUNK} bytes of stream each, every frame behind its 8-byte header.
 * The cut matters: NRI's Go side reads its multiplexed connection through a 4 KiB buffer and
 * refuses a frame that does not fit the read it is given, so a bigger frame would break the
 * connection. Several threads answer (the reader, the call pool, the deadline timer); a lock keeps
 * each message's frames together. What the plugin sends is small (answers, RegisterPlugin).
 */
final class MuxWriter {

    static final int MAX_CHUNK = 4096;
    /** The largest message the plugin sends; its answers and its registration are a few dozen bytes. */
    static final int MAX_OUT = 16 << 10;

    private final WritableByteChannel channel;
    private final ReentrantLock lock = new ReentrantLock();
    private final ByteBuffer out;
    /** {@link System#nanoTime()} when the write in progress began, 0 when none is: a stalled peer shows here. */
    private volatile long writingSince;

    MuxWriter(WritableByteChannel channel) {
        this.channel = channel;
        int frames = (MuxReader.MESSAGE_HEADER + MAX_OUT + MAX_CHUNK - 1) / MAX_CHUNK;
        this.out = ByteBuffer.allocate(MuxReader.MESSAGE_HEADER + MAX_OUT + frames * MuxReader.FRAME_HEADER);
    }

    /** Sends one ttrpc message on {@code connection}. */
    void send(int connection, int streamId, int type, byte[] message) throws IOException {
        if (message.length > MAX_OUT) {
            throw new IllegalArgumentException("message of " + message.length + " bytes");
        }
        byte[] stream = new byte[MuxReader.MESSAGE_HEADER + message.length];
        ByteBuffer.wrap(stream).putInt(message.length).putInt(streamId).put((byte) type).put((byte) 0).put(message);
        lock.lock();
        try {
            out.clear();
            for (int sent = 0; sent < stream.length; sent += MAX_CHUNK) {
                int chunk = Math.min(MAX_CHUNK, stream.length - sent);
                out.putInt(connection).putInt(chunk).put(stream, sent, chunk);
            }
            out.flip();
            writingSince = System.nanoTime() | 1;
            try {
                while (out.hasRemaining()) {
                    channel.write(out);
                }
            } finally {
                writingSince = 0;
            }
        } finally {
            lock.unlock();
        }
    }

    /** How long the write in progress has been blocked, in nanoseconds; 0 when none is. */
    long stalledNanos() {
        long since = writingSince;
        return since == 0 ? 0 : System.nanoTime() - since;
    }
}
