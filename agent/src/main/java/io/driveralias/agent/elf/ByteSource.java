package io.driveralias.agent.elf;

import java.io.EOFException;
import java.io.IOException;

/**
 * Positional, bounded reads from a file whose size is known up front. The ELF reader never
 * maps or slurps a file: it asks for the few hundred bytes it needs.
 */
public interface ByteSource {

    long size();

    /** Reads exactly {@code length} bytes at {@code position} into {@code dst[0..length)}. */
    void readFully(long position, byte[] dst, int length) throws IOException;

    static ByteSource of(byte[] bytes) {
        return new ByteSource() {
            @Override
            public long size() {
                return bytes.length;
            }

            @Override
            public void readFully(long position, byte[] dst, int length) throws IOException {
                if (position < 0 || length < 0 || position > bytes.length - (long) length) {
                    throw new EOFException("read of " + length + " bytes at " + position
                            + " past the end (" + bytes.length + ")");
                }
                System.arraycopy(bytes, (int) position, dst, 0, length);
            }
        };
    }
}
