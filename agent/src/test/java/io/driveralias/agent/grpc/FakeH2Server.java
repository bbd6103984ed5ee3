package io.driveralias.agent.grpc;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * An HTTP/2 server on a Unix socket whose every move the test writes: it accepts connections one
 * at a time and hands each to the test's script as a {@link Peer}, which reads the client's frames
 * (the production {@link FrameReader}, the request headers through {@link HpackDecoder}) and
 * writes what the test builds with {@link ServerFrames}. Each script runs on its own thread; its
 * failure is the test's, through {@link #await}.
 */
final class FakeH2Server implements AutoCloseable {

    @FunctionalInterface
    interface Script {
        void run(Peer peer) throws Exception;
    }

    private final ServerSocketChannel server;
    private final Path socket;

    FakeH2Server(Path socket) throws IOException {
        this.socket = socket;
        this.server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(socket));
    }

    Path socket() {
        return socket;
    }

    /** The next connection, run by {@code script} on a thread of its own. */
    CompletableFuture<Void> serve(Script script) {
        return CompletableFuture.runAsync(() -> {
            try (SocketChannel channel = server.accept()) {
                script.run(new Peer(channel));
            } catch (Exception | AssertionError e) {
                // Shown at once: a test waiting on the client would otherwise only see its timeout.
                e.printStackTrace();
                throw new IllegalStateException(e);
            }
        }, r -> Thread.ofPlatform().daemon().start(r));
    }

    static void await(CompletableFuture<Void> script) throws Exception {
        script.get(10, TimeUnit.SECONDS);
    }

    @Override
    public void close() throws IOException {
        server.close();
    }

    /** One client connection as the script sees it. */
    static final class Peer {
        final SocketChannel channel;
        final FrameReader frames;
        private final HpackDecoder requests = new HpackDecoder(4096, 1 << 20);

        Peer(SocketChannel channel) {
            this.channel = channel;
            this.frames = new FrameReader(channel, ByteBuffer.allocate(1 << 20));
        }

        /** The client's preface and its first frames: SETTINGS (returned as id to value) and the connection's WINDOW_UPDATE. */
        Map<Integer, Long> preface() throws IOException {
            ByteBuffer magic = ByteBuffer.allocate(Frames.PREFACE.length);
            while (magic.hasRemaining()) {
                if (channel.read(magic) < 0) {
                    throw new IOException("closed in the preface");
                }
            }
            if (!new String(magic.array(), StandardCharsets.US_ASCII).equals(new String(Frames.PREFACE, StandardCharsets.US_ASCII))) {
                throw new IOException("not the preface");
            }
            expect(FrameReader.SETTINGS);
            Map<Integer, Long> settings = new LinkedHashMap<>();
            for (int at = 0; at < frames.length(); at += 6) {
                settings.put((frames.array()[frames.offset() + at] & 0xff) << 8 | frames.array()[frames.offset() + at + 1] & 0xff,
                        frames.u32(at + 2));
            }
            return settings;
        }

        /** The next frame, which must be of {@code type}. */
        void expect(int type) throws IOException {
            if (!frames.next()) {
                throw new IOException("the client closed the connection");
            }
            if (frames.type() != type) {
                throw new IOException("frame type " + frames.type() + " where " + type + " was expected");
            }
        }

        /** The next frame of {@code type}, skipping others (acknowledgements, window updates); false at the end. */
        boolean next(int type) throws IOException {
            while (frames.next()) {
                if (frames.type() == type) {
                    return true;
                }
            }
            return false;
        }

        /** A request: its HEADERS (decoded) and its message (the DATA frames up to END_STREAM), from {@link #next} on. */
        Request request() throws IOException {
            if (!next(FrameReader.HEADERS)) {
                throw new IOException("no request");
            }
            return requestHere();
        }

        /** The request whose HEADERS frame was just read. */
        Request requestHere() throws IOException {
            int stream = frames.stream();
            Map<String, String> headers = new LinkedHashMap<>();
            requests.decode(frames.array(), frames.offset(), frames.length(), headers::put);
            java.io.ByteArrayOutputStream data = new java.io.ByteArrayOutputStream();
            while (next(FrameReader.DATA)) {
                data.write(frames.array(), frames.offset(), frames.length());
                if (frames.flag(FrameReader.END_STREAM)) {
                    break;
                }
            }
            byte[] framed = data.toByteArray();
            return new Request(stream, headers, java.util.Arrays.copyOfRange(framed, 5, framed.length));
        }

        void send(ServerFrames frames) {
            send(frames.bytes());
        }

        void send(byte[] bytes) {
            try {
                ByteBuffer b = ByteBuffer.wrap(bytes);
                while (b.hasRemaining()) {
                    channel.write(b);
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    record Request(int stream, Map<String, String> headers, byte[] message) {
    }
}
