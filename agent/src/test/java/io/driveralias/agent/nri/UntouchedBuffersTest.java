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
}
