package io.driveralias.agent.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import io.driveralias.agent.testing.SeededCases;
import io.driveralias.agent.testing.TrickleChannel;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The connection's reading side against generated server streams, as Go's server writes them
 * (SETTINGS, PING, header blocks HPACK-coded with its dynamic table and Huffman, cut into
 * CONTINUATIONs; answers cut into DATA frames anyhow; trailers-only failures; RST_STREAM;
 * WINDOW_UPDATE; unknown frame types), delivered by a socket that returns a few bytes at a time;
 * then the same streams mutated (bytes flipped, lengths set to extremes, cut short). Unmutated,
 * every call gets exactly its answer or its failure; mutated, the reading ends (the server's close
 * or the codec's own error, never another exception), every call is over, nothing hangs, and the
 * reading allocates by what arrived, never by what a header claims.
 */
class H2ConnectionFuzzTest {

    private static final Duration HANG = Duration.ofSeconds(5);
    private static final int MAX_MESSAGE = 1 << 20;
    private static final long[] EXTREMES = {0, 1, 4, 5, 9, 16_383, 16_384, 16_385, 65_535, MAX_MESSAGE, MAX_MESSAGE + 1L,
        0x7fff_ffffL, 0x8000_0000L, 0xffff_ffffL};

    /** What a call is to get: its answer, or the failure's code. */
    record Outcome(byte[] answer, GrpcException.Code code) {
    }

    record Generated(byte[] bytes, List<Outcome> outcomes) {
    }

    static Stream<Long> seeds() {
        return SeededCases.seeds(400);
    }

    static Generated generate(SplittableRandom random, int calls) {
        ServerFrames f = new ServerFrames().huffman(random.nextBoolean());
        f.settings(Frames.SETTINGS_MAX_CONCURRENT_STREAMS, 1000, Frames.SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20,
                Frames.SETTINGS_MAX_FRAME_SIZE, 16_384 + random.nextInt(1000));
        List<Outcome> outcomes = new ArrayList<>();
        for (int i = 0; i < calls; i++) {
            int stream = 1 + 2 * i;
            int split = random.nextInt(3) == 0 ? 1 + random.nextInt(20) : 0;
            if (random.nextInt(8) == 0) {
                f.ping(random.nextLong()).windowUpdate(0, 1 + random.nextInt(1000)).frame(0x42, random.nextInt(256), 0, new byte[7]);
            }
            switch (random.nextInt(6)) {
                case 0 -> {
                    f.headers(stream, true, split, ":status", "200", "content-type", "application/grpc", "grpc-status", "5",
                            "grpc-message", "not found " + random.nextInt(1000));
                    outcomes.add(new Outcome(null, GrpcException.Code.NOT_FOUND));
                }
                case 1 -> {
                    f.reset(stream, H2ProtocolException.REFUSED_STREAM);
                    outcomes.add(new Outcome(null, GrpcException.Code.UNAVAILABLE));
                }
                default -> {
                    byte[] answer = new byte[random.nextInt(4) == 0 ? random.nextInt(40_000) : random.nextInt(200)];
                    random.nextBytes(answer);
                    f.headers(stream, false, split, ":status", "200", "content-type", "application/grpc+proto", "date",
                            "Sat, 05 Dec 2026 05:00:0" + random.nextInt(10) + " GMT");
                    f.messages(stream, 1 + random.nextInt(random.nextBoolean() ? 30 : 16_384), answer);
                    f.headers(stream, true, split, "grpc-status", "0", "grpc-message", "");
                    outcomes.add(new Outcome(answer, GrpcException.Code.OK));
                }
            }
        }
        return new Generated(f.bytes(), outcomes);
    }

    /** {@code calls} calls opened on a connection over {@code bytes}, then its reading run to its end on this thread. */
    static List<GrpcStream> run(H2Connection connection, int calls, long[] allocated) throws Exception {
        List<GrpcStream> streams = new ArrayList<>();
        long deadline = System.nanoTime() + HANG.toNanos();
        for (int i = 0; i < calls; i++) {
            streams.add(connection.open(Frames.ascii("/test.Fuzz/Call"), new byte[0][], new byte[] {8, 1}, false, MAX_MESSAGE, deadline));
        }
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long before = threads.getCurrentThreadAllocatedBytes();
        connection.run();
        allocated[0] = threads.getCurrentThreadAllocatedBytes() - before;
        return streams;
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void generatedStreamsGiveEachCallItsOwnAnswer(long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        int calls = 1 + random.nextInt(6);
        Generated g = generate(random, calls);
        assertTimeoutPreemptively(HANG, () -> {
            H2Connection connection = new H2Connection(new TrickleChannel(g.bytes(), random), ByteBuffer.allocate(64 << 10));
            List<GrpcStream> streams = run(connection, calls, new long[1]);
            assertThat(connection.failure().getMessage()).as("the reading ends at the server's close")
                    .contains("the server closed the connection");
            for (int i = 0; i < calls; i++) {
                Outcome want = g.outcomes().get(i);
                GrpcStream stream = streams.get(i);
                assertThat(stream.isOver()).isTrue();
                if (want.answer() != null) {
                    assertThat(Arrays.equals(stream.result(), want.answer())).as("call %d's answer", i).isTrue();
                } else {
                    GrpcException failure = catchFailure(stream);
                    assertThat(failure.code()).as("call %d", i).isEqualTo(want.code());
                }
            }
        });
    }

    /** Where the payloads of HEADERS and CONTINUATION frames are: (offset, length) pairs. */
    private static List<int[]> headerBlocks(byte[] bytes) {
        List<int[]> blocks = new ArrayList<>();
        for (int at = 0; at + 9 <= bytes.length; ) {
            int length = (bytes[at] & 0xff) << 16 | (bytes[at + 1] & 0xff) << 8 | bytes[at + 2] & 0xff;
            int type = bytes[at + 3];
            if (length > 0 && (type == FrameReader.HEADERS || type == FrameReader.CONTINUATION)) {
                blocks.add(new int[] {at + 9, length});
            }
            at += 9 + length;
        }
        return blocks;
    }

    private static GrpcException catchFailure(GrpcStream stream) {
        try {
            stream.result();
        } catch (GrpcException e) {
            return e;
        }
        throw new AssertionError("the call succeeded");
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void mutatedStreamsEndEveryCallWithoutHangingOrAllocatingByClaims(long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        int calls = 1 + random.nextInt(6);
        byte[] bytes = generate(random, calls).bytes();
        int mutations = 1 + random.nextInt(4);
        List<int[]> blocks = headerBlocks(bytes);
        for (int i = 0; i < mutations && bytes.length > 0; i++) {
            // Half the mutations inside a header block, where HPACK's lengths and indexes are.
            int[] block = blocks.isEmpty() || random.nextBoolean() ? null : blocks.get(random.nextInt(blocks.size()));
            int at = block == null ? random.nextInt(bytes.length) : block[0] + random.nextInt(block[1]);
            if (at >= bytes.length) {
                continue;
            }
            switch (random.nextInt(4)) {
                case 0 -> bytes[at] ^= (byte) (1 << random.nextInt(8));
                case 1 -> {
                    long value = EXTREMES[random.nextInt(EXTREMES.length)];
                    int width = random.nextBoolean() ? 3 : 4;
                    for (int k = 0; k < width && at + k < bytes.length; k++) {
                        bytes[at + k] = (byte) (value >>> (8 * (width - 1 - k)));
                    }
                }
                case 2 -> bytes = Arrays.copyOf(bytes, at);
                default -> bytes[at] = (byte) random.nextInt(256);
            }
        }
        byte[] input = bytes;
        assertTimeoutPreemptively(HANG, () -> {
            H2Connection connection = new H2Connection(new TrickleChannel(input, random), ByteBuffer.allocate(64 << 10));
            long[] allocated = new long[1];
            List<GrpcStream> streams = run(connection, calls, allocated);
            GrpcException end = connection.failure();
            assertThat(end).isNotNull();
            assertThat(end.getMessage()).as("the server's close or the codec's own error").doesNotContain("the client failed reading");
            for (GrpcStream stream : streams) {
                assertThat(stream.isOver()).isTrue();
                try {
                    stream.result();
                } catch (GrpcException expected) {
                    // a call's failure: the codec's, or the server's as it came
                }
            }
            assertThat(allocated[0]).as("bytes allocated reading %d mutated bytes", input.length)
                    .isLessThan((512L << 10) + 4L * input.length);
        });
    }
}
