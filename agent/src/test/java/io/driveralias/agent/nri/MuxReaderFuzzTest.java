package io.driveralias.agent.nri;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import io.driveralias.agent.testing.SeededCases;
import io.driveralias.agent.testing.TrickleChannel;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The multiplexer and ttrpc reassembly against generated streams: messages of both connections
 * cut into frames at random places and interleaved, frames of unknown connections among them,
 * delivered by a socket that returns a few bytes at a time; then the same streams mutated (bytes
 * flipped, headers set to extreme lengths, cut short). The reader must give back exactly the
 * messages sent, or end cleanly, or fail with its own {@link NriProtocolException}; never hang,
 * and never allocate by what a header claims (its buffers are given to it once).
 */
class MuxReaderFuzzTest {

    private static final Duration HANG = Duration.ofSeconds(5);
    private static final long[] EXTREMES = {0, 1, 9, 10, 11, 4095, 4096, 4097, MuxReader.MAX_MESSAGE, MuxReader.MAX_MESSAGE + 1,
        MuxReader.MAX_FRAME, MuxReader.MAX_FRAME + 1, 0x7fff_ffffL, 0x8000_0000L, 0xffff_ffffL};

    /** A message as sent: its connection, stream, type, flags and body. */
    record Sent(int connection, int stream, int type, int flags, byte[] body) {
    }

    record Stream0(byte[] bytes, List<Sent> messages) {
    }

    static Stream<Long> seeds() {
        return SeededCases.seeds(600);
    }

    /** Messages for connections 1 and 2, each cut into frames, frames interleaved; frames of connection 3 and 0 mixed in. */
    static Stream0 generate(SplittableRandom random) {
        List<Sent> messages = new ArrayList<>();
        int count = 1 + random.nextInt(12);
        for (int i = 0; i < count; i++) {
            int size = switch (random.nextInt(16)) {
                case 0, 1 -> 0;
                case 2, 3 -> 4096 + random.nextInt(20_000);
                case 4 -> 150_000;
                default -> random.nextInt(300);
            };
            byte[] body = new byte[size];
            random.nextBytes(body);
            messages.add(new Sent(1 + random.nextInt(2), 1 + 2 * random.nextInt(1000), 1 + random.nextInt(3), random.nextInt(8), body));
        }
        // Each connection's byte stream, cut into frames; frames of the two connections taken in random order.
        List<List<byte[]>> frames = List.of(new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
        for (Sent m : messages) {
            ByteBuffer ttrpc = ByteBuffer.allocate(10 + m.body().length).putInt(m.body().length).putInt(m.stream()).put((byte) m.type())
                    .put((byte) m.flags()).put(m.body()).flip();
            while (ttrpc.hasRemaining()) {
                int n = Math.min(ttrpc.remaining(), 1 + random.nextInt(random.nextBoolean() ? 16 : 70_000));
                byte[] chunk = new byte[n];
                ttrpc.get(chunk);
                frames.get(m.connection()).add(chunk);
            }
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int[] next = {0, 0, 0};
        while (next[1] < frames.get(1).size() || next[2] < frames.get(2).size()) {
            if (random.nextInt(10) == 0) {
                byte[] foreign = new byte[random.nextInt(50)];
                random.nextBytes(foreign);
                frame(out, random.nextBoolean() ? 0 : 3 + random.nextInt(5), foreign);
            }
            int c = 1 + random.nextInt(2);
            if (next[c] >= frames.get(c).size()) {
                c = 3 - c;
            }
            frame(out, c, frames.get(c).get(next[c]++));
        }
        return new Stream0(out.toByteArray(), messages);
    }

    private static void frame(ByteArrayOutputStream out, int connection, byte[] payload) {
        out.writeBytes(ByteBuffer.allocate(8).putInt(connection).putInt(payload.length).array());
        out.writeBytes(payload);
    }

    /** A socket that hands out at most a few bytes per read, as a busy one may. */
    static ReadableByteChannel trickle(byte[] bytes, SplittableRandom random) {
        return new TrickleChannel(bytes, random);
    }

    /** The reader's buffers, given once and reused by every case, as the plugin reuses them for every connection. */
    private static final ByteBuffer INPUT = ByteBuffer.allocateDirect(64 << 10);
    private static final ByteBuffer PLUGIN_BODY = ByteBuffer.allocateDirect(MuxReader.MAX_MESSAGE);
    private static final ByteBuffer RUNTIME_BODY = ByteBuffer.allocate(200_000);

    static MuxReader reader(ReadableByteChannel channel) {
        return new MuxReader(channel, INPUT, PLUGIN_BODY, RUNTIME_BODY);
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void whatTheWriterSendsTheReaderReadsAndNoFrameIsOver4KiB(long seed) throws IOException {
        SplittableRandom random = new SplittableRandom(seed);
        ByteArrayOutputStream sink = new ByteArrayOutputStream();
        MuxWriter writer = new MuxWriter(java.nio.channels.Channels.newChannel(sink));
        List<Sent> sent = new ArrayList<>();
        for (int i = random.nextInt(6); i >= 0; i--) {
            byte[] body = new byte[random.nextInt(4) == 0 ? random.nextInt(MuxWriter.MAX_OUT + 1) : random.nextInt(100)];
            random.nextBytes(body);
            Sent s = new Sent(1 + random.nextInt(2), 1 + 2 * random.nextInt(50), 1 + random.nextInt(2), 0, body);
            writer.send(s.connection(), s.stream(), s.type(), s.body());
            sent.add(s);
        }
        ByteBuffer frames = ByteBuffer.wrap(sink.toByteArray());
        while (frames.hasRemaining()) {
            frames.getInt();
            int length = frames.getInt();
            assertThat(length).isBetween(1, MuxWriter.MAX_CHUNK);
            frames.position(frames.position() + length);
        }
        MuxReader reader = reader(trickle(sink.toByteArray(), random));
        for (Sent s : sent) {
            MuxReader.Message m = reader.next();
            byte[] body = new byte[m.length()];
            m.body().get(0, body);
            assertThat(List.of(m.connection(), m.streamId(), m.type(), m.flags())).isEqualTo(List.of(s.connection(), s.stream(),
                    s.type(), s.flags()));
            assertThat(Arrays.equals(body, s.body())).as("the body of a message of %d bytes", s.body().length).isTrue();
        }
        assertThat(reader.next()).isNull();
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void generatedStreamsComeBackMessageByMessage(long seed) throws IOException {
        SplittableRandom random = new SplittableRandom(seed);
        Stream0 stream = generate(random);
        MuxReader reader = reader(trickle(stream.bytes(), random));

        List<Sent> received = new ArrayList<>();
        MuxReader.Message m;
        while ((m = reader.next()) != null) {
            byte[] body = new byte[m.length()];
            m.body().get(0, body);
            received.add(new Sent(m.connection(), m.streamId(), m.type(), m.flags(), body));
        }

        // Per connection, in the order sent; the two connections may interleave otherwise.
        for (int c = 1; c <= 2; c++) {
            int connection = c;
            List<Sent> want = stream.messages().stream().filter(s -> s.connection() == connection).toList();
            List<Sent> got = received.stream().filter(s -> s.connection() == connection).toList();
            assertThat(got).hasSize(want.size());
            for (int i = 0; i < want.size(); i++) {
                assertThat(got.get(i).stream()).isEqualTo(want.get(i).stream());
                assertThat(got.get(i).type()).isEqualTo(want.get(i).type());
                assertThat(got.get(i).flags()).isEqualTo(want.get(i).flags());
                assertThat(got.get(i).body()).isEqualTo(want.get(i).body());
            }
        }
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void mutatedStreamsEndCleanlyOrFailWithTheCodecsOwnError(long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        byte[] bytes = generate(random).bytes();
        int mutations = 1 + random.nextInt(4);
        for (int i = 0; i < mutations && bytes.length > 0; i++) {
            int at = random.nextInt(bytes.length);
            switch (random.nextInt(4)) {
                case 0 -> bytes[at] ^= (byte) (1 << random.nextInt(8));
                case 1 -> {
                    long value = EXTREMES[random.nextInt(EXTREMES.length)];
                    for (int k = 0; k < 4 && at + k < bytes.length; k++) {
                        bytes[at + k] = (byte) (value >>> (24 - 8 * k));
                    }
                }
                case 2 -> bytes = Arrays.copyOf(bytes, at);
                default -> bytes[at] = (byte) random.nextInt(256);
            }
        }
        byte[] input = bytes;
        assertTimeoutPreemptively(HANG, () -> {
            MuxReader reader = reader(trickle(input, random));
            long allocated = ObjectDecoderTest.allocatedBy(() -> {
                try {
                    while (reader.next() != null) {
                        // read to the end
                    }
                } catch (NriProtocolException expected) {
                    // the codec's own error
                }
            });
            assertThat(allocated).as("bytes allocated reading %d mutated bytes", input.length).isLessThan(256L << 10);
        });
    }

    @Test
    void hostileLengthsFailAtTheHeaderWithoutAllocating() throws Exception {
        for (long claim : new long[] {MuxReader.MAX_FRAME + 1L, 0x8000_0000L, 0xffff_ffffL}) {
            byte[] frame = ByteBuffer.allocate(8).putInt(1).putInt((int) claim).array();
            MuxReader reader = reader(trickle(frame, new SplittableRandom(1)));
            NriProtocolException[] error = new NriProtocolException[1];
            long allocated = ObjectDecoderTest.allocatedBy(() -> {
                try {
                    reader.next();
                } catch (NriProtocolException e) {
                    error[0] = e;
                }
            });
            assertThat(error[0]).hasMessageContaining("frame of " + claim);
            assertThat(allocated).isLessThan(4L << 10);
        }
        byte[] message = ByteBuffer.allocate(18).putInt(2).putInt(10).putInt(300_000).putInt(1).put((byte) 2).put((byte) 0).array();
        assertThatThrownBy(() -> reader(trickle(message, new SplittableRandom(1))).next()).isInstanceOf(NriProtocolException.class)
                .hasMessageContaining("message of 300000 bytes on connection 2 over the bound of 200000");
    }

    @Test
    void theEndOfTheStreamInsideAFrameIsAnErrorAndBetweenFramesIsNot() throws IOException {
        byte[] whole = ByteBuffer.allocate(18).putInt(1).putInt(10).putInt(0).putInt(1).put((byte) 1).put((byte) 0).array();
        MuxReader clean = reader(trickle(whole, new SplittableRandom(2)));
        assertThat(clean.next()).isNotNull();
        assertThat(clean.next()).isNull();
        for (int cut = 1; cut < whole.length; cut++) {
            byte[] partial = Arrays.copyOf(whole, cut);
            assertThatThrownBy(() -> reader(trickle(partial, new SplittableRandom(3))).next()).isInstanceOf(NriProtocolException.class);
        }
    }
}
