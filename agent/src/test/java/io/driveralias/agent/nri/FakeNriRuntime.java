package io.driveralias.agent.nri;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.MessageLite;
import io.driveralias.agent.testing.nri.ConfigureRequest;
import io.driveralias.agent.testing.nri.Container;
import io.driveralias.agent.testing.nri.PodSandbox;
import io.driveralias.agent.testing.nri.RegisterPluginRequest;
import io.driveralias.agent.testing.nri.Request;
import io.driveralias.agent.testing.nri.Response;
import io.driveralias.agent.testing.nri.StartContainerRequest;
import io.driveralias.agent.testing.nri.StateChangeEvent;
import io.driveralias.agent.testing.nri.Status;
import io.driveralias.agent.testing.nri.SynchronizeRequest;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A container runtime's side of NRI, for unit tests of the plugin over a real Unix socket: it
 * listens where the plugin connects, answers RegisterPlugin, and calls the Plugin service as
 * containerd does (Configure, Synchronize, StateChange...), timing each answer. It frames what it
 * sends as NRI's Go multiplexer does (a first frame of at most 4 KiB, the rest of a message in one
 * frame), and can send raw bytes for hostile cases. Written from NRI's wire description, sharing
 * nothing with the plugin's codec.
 */
public final class FakeNriRuntime implements AutoCloseable {

    static final String PLUGIN = "nri.pkg.api.v1alpha1.Plugin";
    static final int START_CONTAINER = 6;

    private final Path socket;
    private final ServerSocketChannel server;

    public FakeNriRuntime(Path socket) {
        this.socket = socket;
        try {
            Files.deleteIfExists(socket);
            server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
            server.bind(UnixDomainSocketAddress.of(socket));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The next plugin to connect, within {@code timeout}. */
    public Peer accept(Duration timeout) {
        try {
            server.configureBlocking(false);
            long deadline = System.nanoTime() + timeout.toNanos();
            while (System.nanoTime() < deadline) {
                SocketChannel channel = server.accept();
                if (channel != null) {
                    channel.configureBlocking(true);
                    return new Peer(channel);
                }
                Thread.sleep(5);
            }
            throw new AssertionError("no plugin connected within " + timeout);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** A plugin connected and registered, configured with a request timeout of {@code timeoutMs}: the runtime's usual start. */
    public Peer acceptConfigured(Duration timeout, long timeoutMs) {
        Peer peer = accept(timeout);
        peer.awaitRegistration(timeout);
        Reply reply = peer.configure("fake-runtime", "v0.0.1", timeoutMs);
        if (!reply.ok()) {
            throw new AssertionError("Configure failed: " + reply);
        }
        return peer;
    }

    @Override
    public void close() {
        try {
            server.close();
            Files.deleteIfExists(socket);
        } catch (IOException e) {
            // best effort
        }
    }

    /** An answer from the plugin: status code (0 success), payload, how long it took from the request's last byte written. */
    public record Reply(int code, String message, byte[] payload, long nanos) {
        public boolean ok() {
            return code == 0;
        }

        public <T> T as(com.google.protobuf.Parser<T> parser) {
            try {
                return parser.parseFrom(payload);
            } catch (InvalidProtocolBufferException e) {
                throw new AssertionError(e);
            }
        }
    }

    /** One connected plugin. */
    public static final class Peer implements AutoCloseable {
        private final SocketChannel channel;
        private final DataInputStream in;
        private final Map<Integer, CompletableFuture<Reply>> pending = new ConcurrentHashMap<>();
        private final Map<Integer, Long> sentAt = new ConcurrentHashMap<>();
        private final BlockingQueue<RegisterPluginRequest> registrations = new LinkedBlockingQueue<>();
        private final CountDownLatch eof = new CountDownLatch(1);
        private final ByteArrayOutputStream[] streams = {new ByteArrayOutputStream(), new ByteArrayOutputStream(),
            new ByteArrayOutputStream()};
        private volatile boolean answerRegistration = true;
        private final CountDownLatch reading = new CountDownLatch(1);
        private volatile boolean paused;
        private int nextStream = 1;

        Peer(SocketChannel channel) {
            this.channel = channel;
            this.in = new DataInputStream(Channels.newInputStream(channel));
            Thread reader = new Thread(this::read, "fake-nri-runtime");
            reader.setDaemon(true);
            reader.start();
        }

        /** The runtime stops reading what the plugin sends (a runtime that hangs while the plugin answers). */
        public void pauseReading() {
            paused = true;
        }

        /** Registration requests go unanswered from now on (a runtime that hangs). */
        public void ignoreRegistration() {
            answerRegistration = false;
        }

        public RegisterPluginRequest awaitRegistration(Duration timeout) {
            try {
                RegisterPluginRequest r = registrations.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
                if (r == null) {
                    throw new AssertionError("the plugin did not register within " + timeout);
                }
                return r;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }

        public Reply configure(String name, String version, long requestTimeoutMs) {
            return configure(ConfigureRequest.newBuilder().setRuntimeName(name).setRuntimeVersion(version)
                    .setRegistrationTimeout(5000).setRequestTimeout(requestTimeoutMs).build());
        }

        public Reply configure(ConfigureRequest request) {
            return call("Configure", request, Duration.ofSeconds(5));
        }

        public Reply synchronize(SynchronizeRequest request) {
            return call("Synchronize", request, Duration.ofSeconds(10));
        }

        public Reply startContainer(PodSandbox pod, Container container, Duration timeout) {
            return call("StateChange", StateChangeEvent.newBuilder().setEvent(START_CONTAINER).setPod(pod).setContainer(container)
                    .build(), timeout);
        }

        /** StartContainer as NRI 0.12 calls it: the dedicated method. */
        public Reply startContainerDedicated(PodSandbox pod, Container container, Duration timeout) {
            return call("StartContainer", StartContainerRequest.newBuilder().setPod(pod).setContainer(container).build(), timeout);
        }

        public CompletableFuture<Reply> startContainerAsync(PodSandbox pod, Container container) {
            return send(PLUGIN, "StateChange", StateChangeEvent.newBuilder().setEvent(START_CONTAINER).setPod(pod)
                    .setContainer(container).build().toByteArray(), 2_000_000_000L);
        }

        public Reply call(String method, MessageLite request, Duration timeout) {
            return await(send(PLUGIN, method, request.toByteArray(), timeout.toNanos()), timeout);
        }

        public static Reply await(CompletableFuture<Reply> reply, Duration timeout) {
            try {
                return reply.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                throw new AssertionError("no answer within " + timeout);
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        }

        /** A request on the Plugin connection. */
        synchronized CompletableFuture<Reply> send(String service, String method, byte[] payload, long timeoutNano) {
            int stream = nextStream;
            nextStream += 2;
            CompletableFuture<Reply> reply = new CompletableFuture<>();
            pending.put(stream, reply);
            byte[] message = Request.newBuilder().setService(service).setMethod(method).setPayload(ByteString.copyFrom(payload))
                    .setTimeoutNano(timeoutNano).build().toByteArray();
            sentAt.put(stream, System.nanoTime());
            writeMessage(1, stream, 1, message);
            return reply;
        }

        /** A ttrpc message framed as NRI's Go side frames it: a first frame of up to 4 KiB, then the rest in one. */
        synchronized void writeMessage(int connection, int stream, int type, byte[] message) {
            ByteBuffer ttrpc = ByteBuffer.allocate(10 + message.length);
            ttrpc.putInt(message.length).putInt(stream).put((byte) type).put((byte) 0).put(message).flip();
            int first = Math.min(4096, ttrpc.remaining());
            ByteBuffer out = ByteBuffer.allocate(16 + ttrpc.remaining());
            out.putInt(connection).putInt(first).put(ttrpc.slice(0, first));
            if (ttrpc.remaining() > first) {
                out.putInt(connection).putInt(ttrpc.remaining() - first).put(ttrpc.slice(first, ttrpc.remaining() - first));
            }
            raw(out.flip());
        }

        synchronized void raw(ByteBuffer bytes) {
            try {
                while (bytes.hasRemaining()) {
                    channel.write(bytes);
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        /** Whether the plugin closed the connection within {@code timeout}. */
        public boolean closedByPlugin(Duration timeout) throws InterruptedException {
            return eof.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
        }

        private void read() {
            try {
                while (true) {
                    if (paused) {
                        reading.await();
                    }
                    int connection = in.readInt();
                    int length = in.readInt();
                    byte[] frame = in.readNBytes(length);
                    if (frame.length < length) {
                        throw new EOFException();
                    }
                    if (length > 4096) {
                        throw new AssertionError("the plugin sent a frame of " + length + " bytes: NRI's Go reader takes 4 KiB at most");
                    }
                    if (connection == 1 || connection == 2) {
                        streams[connection].write(frame);
                        drain(connection);
                    }
                }
            } catch (IOException | RuntimeException | InterruptedException e) {
                eof.countDown();
                pending.values().forEach(f -> f.completeExceptionally(new EOFException("connection closed")));
            }
        }

        private void drain(int connection) throws IOException {
            while (true) {
                byte[] bytes = streams[connection].toByteArray();
                if (bytes.length < 10) {
                    return;
                }
                ByteBuffer b = ByteBuffer.wrap(bytes);
                int length = b.getInt();
                int stream = b.getInt();
                int type = b.get();
                b.get();
                if (bytes.length < 10 + length) {
                    return;
                }
                byte[] message = new byte[length];
                b.get(message);
                streams[connection].reset();
                streams[connection].write(bytes, 10 + length, bytes.length - 10 - length);
                onMessage(connection, stream, type, message);
            }
        }

        private void onMessage(int connection, int stream, int type, byte[] message) throws IOException {
            if (connection == 2 && type == 1) {
                Request request = Request.parseFrom(message);
                if (request.getMethod().equals("RegisterPlugin")) {
                    registrations.add(RegisterPluginRequest.parseFrom(request.getPayload()));
                }
                if (answerRegistration) {
                    writeMessage(2, stream, 2, new byte[0]);
                }
            } else if (connection == 1 && type == 2) {
                Response response = Response.parseFrom(message);
                Long sent = sentAt.remove(stream);
                CompletableFuture<Reply> reply = pending.remove(stream);
                if (reply != null) {
                    Status status = response.getStatus();
                    reply.complete(new Reply(status.getCode(), status.getMessage(), response.getPayload().toByteArray(),
                            sent == null ? -1 : System.nanoTime() - sent));
                }
            }
        }

        @Override
        public void close() {
            try {
                channel.close();
            } catch (IOException e) {
                // best effort
            }
        }
    }
}
