package io.driveralias.agent.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.BytesValue;
import com.google.protobuf.ByteString;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The client against a server whose every frame the test writes ({@link FakeH2Server}): what a
 * request carries, how answers, failures, deadlines, flow control, GOAWAY and a server that is not
 * HTTP/2 come out to the caller.
 */
class GrpcClientTest {

    private static final GrpcMethod<BytesValue, byte[]> ECHO = new GrpcMethod<>("test.Echo/Call",
            (in, offset, length) -> Arrays.copyOfRange(in, offset, offset + length), 4 << 20);
    private static final GrpcMethod<BytesValue, byte[]> SMALL = new GrpcMethod<>("test.Echo/Small",
            (in, offset, length) -> Arrays.copyOfRange(in, offset, offset + length), 1000);
    private static final byte[][] NAMESPACE = {ascii("containerd-namespace"), ascii("k8s.io")};
    private static final Duration DEADLINE = Duration.ofSeconds(5);

    @TempDir
    Path dir;
    private FakeH2Server server;
    private GrpcClient client;

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    private static BytesValue request(String text) {
        return BytesValue.newBuilder().setValue(ByteString.copyFromUtf8(text)).build();
    }

    @BeforeEach
    void start() throws Exception {
        server = new FakeH2Server(dir.resolve("grpc.sock"));
        client = new GrpcClient(server.socket(), "test-h2-reader");
    }

    @AfterEach
    void stop() throws Exception {
        client.close();
        server.close();
    }

    @Test
    void aUnaryCallCarriesGrpcsHeadersAndReadsAnAnswerCutAnyhow() throws Exception {
        byte[] answer = new byte[40_000];
        new java.util.Random(7).nextBytes(answer);
        CompletableFuture<Void> script = server.serve(peer -> {
            Map<Integer, Long> settings = peer.preface();
            assertThat(settings).containsEntry(Frames.SETTINGS_ENABLE_PUSH, 0L)
                    .containsEntry(Frames.SETTINGS_INITIAL_WINDOW_SIZE, (long) H2Connection.STREAM_WINDOW);
            peer.send(new ServerFrames().settings(Frames.SETTINGS_MAX_CONCURRENT_STREAMS, 100).ping(42));
            FakeH2Server.Request r = peer.request();
            assertThat(r.headers()).containsEntry(":method", "POST").containsEntry(":scheme", "http")
                    .containsEntry(":path", "/test.Echo/Call").containsEntry("content-type", "application/grpc")
                    .containsEntry("te", "trailers").containsEntry("containerd-namespace", "k8s.io").containsKey("grpc-timeout");
            assertThat(r.headers().get("grpc-timeout")).matches("[0-9]{1,8}m");
            assertThat(BytesValue.parseFrom(r.message()).getValue().toStringUtf8()).isEqualTo("hello");
            // Headers over CONTINUATIONs, the message over DATA frames of 1000 bytes.
            ServerFrames frames = new ServerFrames();
            frames.headers(r.stream(), false, 7, ":status", "200", "content-type", "application/grpc", "x-extra", "y".repeat(100));
            frames.messages(r.stream(), 1000, answer).trailers(r.stream(), 0, null);
            peer.send(frames);
            assertThat(peer.next(FrameReader.PING)).isTrue();
            assertThat(peer.frames.flag(FrameReader.ACK)).isTrue();
            assertThat(peer.frames.u32(4)).isEqualTo(42);
        });
        assertThat(client.call(ECHO, request("hello"), NAMESPACE, DEADLINE)).isEqualTo(answer);
        FakeH2Server.await(script);
    }

    @Test
    void aStatusInTheTrailersIsTheCallsFailureWithItsMessage() throws Exception {
        CompletableFuture<Void> script = server.serve(peer -> {
            peer.preface();
            FakeH2Server.Request r = peer.request();
            peer.send(new ServerFrames().headers(r.stream(), true, 0, ":status", "200", "content-type", "application/grpc",
                    "grpc-status", "5", "grpc-message", "container \"x\" not found: %E2%9C%93"));
            FakeH2Server.Request next = peer.request();
            peer.send(new ServerFrames().responseHeaders(next.stream()).trailers(next.stream(), 14, "later"));
        });
        assertThatThrownBy(() -> client.call(ECHO, request("x"), NAMESPACE, DEADLINE)).isInstanceOfSatisfying(GrpcException.class,
                e -> {
                    assertThat(e.code()).isEqualTo(GrpcException.Code.NOT_FOUND);
                    assertThat(e.description()).isEqualTo("container \"x\" not found: \u2713");
                });
        assertThatThrownBy(() -> client.call(ECHO, request("y"), NAMESPACE, DEADLINE)).isInstanceOfSatisfying(GrpcException.class,
                e -> assertThat(e.code()).isEqualTo(GrpcException.Code.UNAVAILABLE));
        FakeH2Server.await(script);
    }

    @Test
    void aServerStreamCarriesNoDeadlineAndHoldsBackAReaderThatTakesNothing() throws Exception {
        int messages = 1200;
        CountDownLatch clientDone = new CountDownLatch(1);
        AtomicLong sentBeforeAnyGrant = new AtomicLong();
        CompletableFuture<Void> script = server.serve(peer -> {
            peer.preface();
            FakeH2Server.Request r = peer.request();
            assertThat(r.headers()).doesNotContainKey("grpc-timeout");
            peer.send(new ServerFrames().responseHeaders(r.stream()));
            // Send as the client's windows allow: the stream's starts at what the client advertised.
            long window = H2Connection.STREAM_WINDOW;
            long connection = H2Connection.CONNECTION_WINDOW;
            boolean granted = false;
            for (int i = 0; i < messages; i++) {
                while (Math.min(window, connection) < 1005) {
                    peer.expect(FrameReader.WINDOW_UPDATE);
                    granted |= peer.frames.stream() == r.stream();
                    if (peer.frames.stream() == 0) {
                        connection += peer.frames.u32(0);
                    } else {
                        window += peer.frames.u32(0);
                    }
                }
                byte[] m = new byte[1000];
                Arrays.fill(m, (byte) i);
                peer.send(new ServerFrames().messages(r.stream(), 16_384, m));
                window -= 1005;
                connection -= 1005;
                if (!granted) {
                    sentBeforeAnyGrant.addAndGet(1005);
                }
            }
            peer.send(new ServerFrames().trailers(r.stream(), 0, null));
            // A server keeps its connection after a stream ends: closing it here would race the
            // client's last WINDOW_UPDATE, a broken pipe that real servers never cause.
            clientDone.await(10, TimeUnit.SECONDS);
        });
        try (ServerStream<byte[]> stream = client.stream(ECHO, request("subscribe"), NAMESPACE, DEADLINE)) {
            Thread.sleep(300);
            assertThat(sentBeforeAnyGrant.get()).as("sent while the reader took nothing")
                    .isLessThanOrEqualTo(H2Connection.STREAM_WINDOW + GrpcStream.HELD + 16_384);
            for (int i = 0; i < messages; i++) {
                byte[] m = stream.next(TimeUnit.SECONDS.toNanos(5));
                assertThat(m).as("message %d", i).hasSize(1000);
                assertThat(m[0]).isEqualTo((byte) i);
            }
            assertThatThrownBy(() -> stream.next(TimeUnit.SECONDS.toNanos(5))).isInstanceOfSatisfying(GrpcException.class,
                    e -> assertThat(e.code()).isEqualTo(GrpcException.Code.OK));
        } finally {
            clientDone.countDown();
        }
        FakeH2Server.await(script);
    }

    @Test
    void aSilentServerMeetsTheDeadlineAndTheNextCallConnectsAnew() throws Exception {
        CompletableFuture<Void> silent = server.serve(peer -> {
            peer.preface();
            peer.request();
            peer.next(FrameReader.GOAWAY);
        });
        long begun = System.nanoTime();
        assertThatThrownBy(() -> client.call(ECHO, request("x"), NAMESPACE, Duration.ofMillis(300)))
                .isInstanceOfSatisfying(GrpcException.class, e -> assertThat(e.code()).isEqualTo(GrpcException.Code.DEADLINE_EXCEEDED));
        assertThat(Duration.ofNanos(System.nanoTime() - begun)).isLessThan(Duration.ofSeconds(2));
        FakeH2Server.await(silent);
        CompletableFuture<Void> answering = server.serve(peer -> {
            peer.preface();
            FakeH2Server.Request r = peer.request();
            peer.send(new ServerFrames().unaryAnswer(r.stream(), ascii("again"), 100));
        });
        assertThat(client.call(ECHO, request("x"), NAMESPACE, DEADLINE)).isEqualTo(ascii("again"));
        FakeH2Server.await(answering);
    }

    @Test
    void anAnswerOverItsBoundFailsItsCallAloneBeforeItArrives() throws Exception {
        CompletableFuture<Void> script = server.serve(peer -> {
            peer.preface();
            FakeH2Server.Request big = peer.request();
            peer.send(new ServerFrames().responseHeaders(big.stream()).frame(FrameReader.DATA, 0, big.stream(),
                    ByteBuffer.allocate(5).put((byte) 0).putInt(1001).array()));
            // The reset and the next call's request, in whichever order they come.
            boolean reset = false;
            FakeH2Server.Request next = null;
            while (!reset || next == null) {
                assertThat(peer.frames.next()).isTrue();
                if (peer.frames.type() == FrameReader.RST_STREAM) {
                    assertThat(peer.frames.stream()).isEqualTo(big.stream());
                    reset = true;
                } else if (peer.frames.type() == FrameReader.HEADERS) {
                    next = peer.requestHere();
                }
            }
            peer.send(new ServerFrames().unaryAnswer(next.stream(), ascii("fits"), 100));
        });
        assertThatThrownBy(() -> client.call(SMALL, request("x"), NAMESPACE, DEADLINE)).isInstanceOfSatisfying(GrpcException.class,
                e -> assertThat(e.code()).isEqualTo(GrpcException.Code.RESOURCE_EXHAUSTED));
        assertThat(client.call(SMALL, request("x"), NAMESPACE, DEADLINE)).isEqualTo(ascii("fits"));
        FakeH2Server.await(script);
    }

    @Test
    void afterGoAwayTheOpenCallFinishesAndNewCallsGoToANewConnection() throws Exception {
        CompletableFuture<Void> first = server.serve(peer -> {
            peer.preface();
            FakeH2Server.Request r = peer.request();
            peer.send(new ServerFrames().goAway(r.stream(), 0).unaryAnswer(r.stream(), ascii("last"), 100));
            peer.next(-1);
        });
        assertThat(client.call(ECHO, request("x"), NAMESPACE, DEADLINE)).isEqualTo(ascii("last"));
        CompletableFuture<Void> second = server.serve(peer -> {
            peer.preface();
            FakeH2Server.Request r = peer.request();
            assertThat(r.stream()).as("a new connection's first stream").isEqualTo(1);
            peer.send(new ServerFrames().unaryAnswer(r.stream(), ascii("new"), 100));
        });
        assertThat(client.call(ECHO, request("x"), NAMESPACE, DEADLINE)).isEqualTo(ascii("new"));
        FakeH2Server.await(second);
        client.close();
        FakeH2Server.await(first);
    }

    @Test
    void anHttp1ServerIsToldAsSuch() throws Exception {
        CompletableFuture<Void> script = server.serve(peer -> {
            peer.channel.read(ByteBuffer.allocate(24));
            peer.send(ascii("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n400 Bad Request"));
        });
        assertThatThrownBy(() -> client.call(ECHO, request("x"), NAMESPACE, DEADLINE)).isInstanceOfSatisfying(GrpcException.class,
                e -> assertThat(e.http1()).isTrue());
        FakeH2Server.await(script);
    }

    @Test
    void noServerIsUnavailableAtOnce() {
        long begun = System.nanoTime();
        assertThatThrownBy(() -> new GrpcClient(dir.resolve("none.sock"), "test").call(ECHO, request("x"), NAMESPACE, DEADLINE))
                .isInstanceOfSatisfying(GrpcException.class, e -> assertThat(e.code()).isEqualTo(GrpcException.Code.UNAVAILABLE));
        assertThat(Duration.ofNanos(System.nanoTime() - begun)).isLessThan(Duration.ofSeconds(1));
    }
}
