package io.driveralias.agent.elf;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/** A file-backed {@link ByteSource} that counts what the reader asks for, to prove reads stay small. */
final class CountingFileSource implements ByteSource, AutoCloseable {

    private final FileChannel channel;
    private final long size;
    private int reads;
    private long bytesRead;

    CountingFileSource(Path file) throws IOException {
        this.channel = FileChannel.open(file, StandardOpenOption.READ);
        this.size = channel.size();
    }

    @Override
    public long size() {
        return size;
    }

    @Override
    public void readFully(long position, byte[] dst, int length) throws IOException {
        reads++;
        bytesRead += length;
        ByteBuffer buf = ByteBuffer.wrap(dst, 0, length);
        long at = position;
        while (buf.hasRemaining()) {
            int n = channel.read(buf, at);
            if (n < 0) {
                throw new EOFException("end of file at " + at);
            }
            at += n;
        }
    }

    int reads() {
        return reads;
    }

    long bytesRead() {
        return bytesRead;
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }
}
