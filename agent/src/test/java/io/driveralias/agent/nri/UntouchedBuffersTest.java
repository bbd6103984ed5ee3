package io.driveralias.agent.nri;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** NRI's 4 MiB message buffer costs the agent's RSS only the pages its messages touch. */
class UntouchedBuffersTest {

    private static long rssAnonKiB() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("RssAnon:")) {
                return Long.parseLong(line.replaceAll("\\D", ""));
            }
        }
        throw new IllegalStateException("no RssAnon in /proc/self/status");
    }

    @Test
    void fourMebibytesCostNothingResidentUntilWrittenAndReadAsZeros() throws IOException {
        long before = rssAnonKiB();
        ByteBuffer[] buffers = new ByteBuffer[8];
        for (int i = 0; i < buffers.length; i++) {
            buffers[i] = UntouchedBuffers.allocate(MuxReader.MAX_MESSAGE);
        }
        long after = rssAnonKiB();

        // allocateDirect would have made 32 MiB resident here.
        assertThat(after - before).as("RssAnon growth in KiB for 8 buffers of 4 MiB").isLessThan(8 << 10);
        ByteBuffer b = buffers[0];
        assertThat(b.isDirect()).isTrue();
        assertThat(b.capacity()).isEqualTo(MuxReader.MAX_MESSAGE);
        assertThat(b.get(MuxReader.MAX_MESSAGE - 1)).isZero();
        b.putInt(0, 0x01020304);
        b.put(MuxReader.MAX_MESSAGE - 1, (byte) 7);
        assertThat(b.getInt(0)).isEqualTo(0x01020304);
        assertThat(b.get(MuxReader.MAX_MESSAGE - 1)).isEqualTo((byte) 7);
    }

    /** Found: one big message left its 4 MiB resident for good. Written over whole, given back, it costs nothing again. */
    @Test
    void thePagesOfABigMessageAreGivenBackAndReadAsZeros() throws IOException {
        ByteBuffer b = UntouchedBuffers.allocate(MuxReader.MAX_MESSAGE);
        long before = rssAnonKiB();
        for (int i = 0; i < MuxReader.MAX_MESSAGE; i += 4096) {
            b.put(i, (byte) 1);
        }
        long written = rssAnonKiB();

        UntouchedBuffers.release(b, NriSession.RESIDENT_MESSAGE, MuxReader.MAX_MESSAGE);
        long released = rssAnonKiB();

        System.out.printf("[nri-buffers] RssAnon: +%d KiB once a 4 MiB message was written, +%d KiB after its pages were given back%n",
                written - before, released - before);
        assertThat(written - before).isGreaterThan(3 << 10);
        assertThat(released - before).as("what stays: the first 64 KiB").isLessThan(1 << 10);
        assertThat(b.get(0)).as("below the mark: kept").isEqualTo((byte) 1);
        assertThat(b.get(NriSession.RESIDENT_MESSAGE)).as("given back: zero").isZero();
        assertThat(b.get(MuxReader.MAX_MESSAGE - 4096)).isZero();

        ByteBuffer heap = ByteBuffer.allocate(1 << 20);
        heap.put(100_000, (byte) 5);
        UntouchedBuffers.release(heap, 0, 1 << 20);
        assertThat(heap.get(100_000)).as("not one of its mappings: left alone").isEqualTo((byte) 5);
    }
}
