package io.driveralias.agent.nri;

import com.google.protobuf.ByteString;
import com.google.protobuf.MessageLite;
import io.driveralias.agent.core.Printable;
import io.driveralias.agent.nri.MuxReader.Message;
import io.driveralias.agent.nri.PluginMessages.Call;
import io.driveralias.agent.nri.PluginMessages.Configure;
import io.driveralias.agent.nri.PluginMessages.StateChange;
import io.driveralias.agent.nri.api.ConfigureResponse;
import io.driveralias.agent.nri.api.RegisterPluginRequest;
import io.driveralias.agent.nri.api.SynchronizeResponse;
import io.driveralias.agent.nri.api.TtrpcRequest;
import io.driveralias.agent.nri.api.TtrpcResponse;
import java.io.IOException;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One connection to the runtime's NRI socket, from RegisterPlugin to its end: reads on the calling
 * thread, answers every call of the Plugin service, and hands StartContainer to the call threads
 * under a deadline. Every answer is a success: an error would fail the pod's start, and a plugin
 * that adjusts nothing has nothing to refuse. Whatever ends the connection (the runtime closing it,
 * a protocol error, {@link #end} from the plugin's watchdog or close) ends {@link #serve()}.
 */
final class NriSession {

    /** The plugin's first (and only) call on the Runtime connection; a caller's stream ids are odd. */
    static final int REGISTER_STREAM = 1;
    /**
     * CreateContainer and StartContainer: bit (event - 1) of ConfigureResponse.events. CreateContainer
     * only to learn, before containerd's own create event, which containers ask for no GPU.
     */
    static final int EVENTS = 1 << (PluginMessages.CREATE_CONTAINER - 1) | 1 << (PluginMessages.START_CONTAINER - 1);
    /** As NRI's own plugins: the runtime drops a plugin that has not registered within its registration timeout (5 s). */
    static final Duration REGISTRATION = Duration.ofSeconds(5);
    /** A write blocked this long: the runtime no longer reads; the connection is made again. */
    static final Duration STALL = Duration.ofSeconds(5);

    private static final Logger LOG = LoggerFactory.getLogger(NriPlugin.class);
    private static final byte[] EMPTY = new byte[0];

    /** What the session needs from its plugin: identity, handler, deadline policy, threads. */
    record Setup(String name, String index, NriHandler handler, StartDeadline deadline, ExecutorService calls, Semaphore callPermits,
                 int callThreads, ScheduledExecutorService timer) {
    }

    private final SocketChannel channel;
    private final MuxReader reader;
    private final MuxWriter writer;
    private final Setup setup;
    private final long openedNanos = System.nanoTime();
    private volatile boolean configured;
    private volatile boolean registered;
    private volatile Duration requestTimeout = Duration.ZERO;
    private volatile String endReason;

    NriSession(SocketChannel channel, MuxReader reader, Setup setup) {
        this.channel = channel;
        this.reader = reader;
        this.writer = new MuxWriter(channel);
        this.setup = setup;
    }

    /** Registers, then serves until the connection ends; returns why it ended. */
    String serve() {
        try {
            byte[] register = RegisterPluginRequest.newBuilder().setPluginName(setup.name()).setPluginIdx(setup.index()).build()
                    .toByteArray();
            writer.send(MuxReader.RUNTIME_CONNECTION, REGISTER_STREAM, MuxReader.REQUEST, TtrpcRequest.newBuilder()
                    .setService(PluginMessages.RUNTIME_SERVICE).setMethod("RegisterPlugin").setPayload(ByteString.copyFrom(register))
                    .setTimeoutNano(REGISTRATION.toNanos()).build().toByteArray());
            while (true) {
                Message message = reader.next();
                if (message == null) {
                    return ended("the runtime closed the connection");
                }
                if (message.connection() == MuxReader.RUNTIME_CONNECTION) {
                    onRuntimeMessage(message);
                } else if (message.type() == MuxReader.REQUEST) {
                    onRequest(message);
                }
            }
        } catch (NriProtocolException e) {
            return ended("protocol error: " + e.getMessage());
        } catch (IOException e) {
            return ended("connection error: " + e);
        } finally {
            close();
        }
    }

    /** Ends the connection from another thread; {@link #serve()} returns {@code why}. */
    void end(String why) {
        if (endReason == null) {
            endReason = why;
        }
        close();
    }

    /** The plugin's watchdog, about twice a second: a runtime that never configures the plugin, or stopped reading. */
    void watch() {
        if (!configured && System.nanoTime() - openedNanos > REGISTRATION.toNanos()) {
            end("the runtime did not configure the plugin within " + REGISTRATION.toSeconds() + " s of connecting");
        } else if (writer.stalledNanos() > STALL.toNanos()) {
            end("the runtime has not read the plugin's answers for " + STALL.toSeconds() + " s");
        }
    }

    /** Registered and configured: the handler was told {@code connected}. */
    boolean configured() {
        return configured;
    }

    private String ended(String why) {
        return endReason != null ? endReason : why;
    }

    private void close() {
        try {
            channel.close();
        } catch (IOException e) {
            // Closing a socket that failed: nothing left to do.
        }
    }

    /** The answer to RegisterPlugin; anything else on the Runtime connection is not for the plugin. */
    private void onRuntimeMessage(Message message) throws NriProtocolException {
        if (message.type() != MuxReader.RESPONSE || message.streamId() != REGISTER_STREAM) {
            return;
        }
        PluginMessages.Reply reply = PluginMessages.reply(message.reader());
        if (reply.code() != 0) {
            throw new NriProtocolException("the runtime refused to register the plugin " + setup.name() + " (code " + reply.code()
                    + "): " + Printable.of(reply.message()));
        }
        registered = true;
    }

    private void onRequest(Message message) throws IOException {
        Call call = PluginMessages.call(message.reader());
        ProtoReader payload = message.reader().reader(call.payload());
        switch (call.method()) {
            case CONFIGURE -> configure(message, PluginMessages.configure(payload));
            case SYNCHRONIZE -> synchronize(message, PluginMessages.synchronize(payload));
            case CREATE_CONTAINER -> created(message, PluginMessages.createContainer(payload));
            case STATE_CHANGE -> stateChange(message, call, PluginMessages.stateChange(payload));
            case SHUTDOWN -> {
                LOG.info("NRI: the runtime is shutting down");
                answer(message.streamId(), EMPTY);
            }
            default -> {
                LOG.debug("NRI: {} answered with an empty success", Printable.of(call.label()));
                answer(message.streamId(), EMPTY);
            }
        }
    }

    private void configure(Message message, Configure configure) throws IOException {
        if (configure.requestTimeoutMs() > 0) {
            requestTimeout = Duration.ofMillis(configure.requestTimeoutMs());
        } else {
            // containerd 1.7 (NRI 0.6) sends no timeouts in Configure; it applies NRI's default.
            requestTimeout = StartDeadline.RUNTIME_DEFAULT_TIMEOUT;
            LOG.debug("NRI: no request timeout in Configure; NRI's default of {} ms assumed", requestTimeout.toMillis());
        }
        answer(message.streamId(), ConfigureResponse.newBuilder().setEvents(EVENTS).build());
        configured = true;
        if (!registered) {
            LOG.debug("NRI: Configure came before the answer to RegisterPlugin");
        }
        setup.handler().connected(configure.runtimeName(), configure.runtimeVersion(), requestTimeout);
    }

    private void synchronize(Message message, NriSync part) throws IOException {
        try {
            setup.handler().synchronize(part);
        } catch (RuntimeException e) {
            LOG.warn("NRI: the Synchronize handler failed: {}", Printable.of(String.valueOf(e)));
        }
        answer(message.streamId(), SynchronizeResponse.newBuilder().setMore(!part.last()).build());
    }

    /** Told to the handler on this thread (it returns at once), then an empty answer: no adjustment, ever. */
    private void created(Message message, PluginMessages.Create create) throws IOException {
        if (create.container() != null) {
            try {
                setup.handler().createContainer(create.pod(), create.container());
            } catch (RuntimeException e) {
                LOG.warn("NRI: the CreateContainer handler failed: {}", Printable.of(String.valueOf(e)));
            }
        }
        answer(message.streamId(), EMPTY);
    }

    private void stateChange(Message message, Call call, StateChange event) throws IOException {
        if (event.event() != PluginMessages.START_CONTAINER || event.container() == null) {
            answer(message.streamId(), EMPTY);
            return;
        }
        if (!wanted(event)) {
            answer(message.streamId(), EMPTY);
            try {
                setup.handler().answeredAtOnce(event.pod(), event.container());
            } catch (RuntimeException e) {
                LOG.warn("NRI: the handler failed after a start answered at once: {}", Printable.of(String.valueOf(e)));
            }
            return;
        }
        long allowed = setup.deadline().nanos(requestTimeout, call.timeoutNano());
        Start start = new Start(message.streamId(), event.pod(), event.container(), message.arrivalNanos(), allowed);
        if (!setup.callPermits().tryAcquire()) {
            start.notServed("all " + setup.callThreads() + " call threads are busy");
            return;
        }
        start.deadlineAnswer = setup.timer().schedule(start::answerNow, start.deadlineNanos() - System.nanoTime(), TimeUnit.NANOSECONDS);
        try {
            setup.calls().execute(start);
        } catch (RejectedExecutionException e) {
            setup.callPermits().release();
            start.notServed("the plugin is closing");
        }
    }

    private boolean wanted(StateChange event) {
        try {
            return setup.handler().wantsStart(event.pod(), event.container());
        } catch (RuntimeException e) {
            LOG.warn("NRI: the handler failed to say whether it wants a start: {}", Printable.of(String.valueOf(e)));
            return true;
        }
    }

    private void answer(int streamId, MessageLite response) throws IOException {
        answer(streamId, response.toByteArray());
    }

    private void answer(int streamId, byte[] response) throws IOException {
        writer.send(MuxReader.PLUGIN_CONNECTION, streamId, MuxReader.RESPONSE,
                response.length == 0 ? EMPTY : TtrpcResponse.newBuilder().setPayload(ByteString.copyFrom(response)).build()
                        .toByteArray());
    }

    /** One StartContainer: answered once, by its handler's return or by its deadline. */
    private final class Start implements StartCall, Runnable {
        private final int streamId;
        private final NriPod pod;
        private final NriContainer container;
        private final long received;
        private final long deadline;
        private final AtomicBoolean answered = new AtomicBoolean();
        private volatile ScheduledFuture<?> deadlineAnswer;

        Start(int streamId, NriPod pod, NriContainer container, long received, long allowed) {
            this.streamId = streamId;
            this.pod = pod;
            this.container = container;
            this.received = received;
            this.deadline = received + allowed;
        }

        @Override
        public long receivedNanos() {
            return received;
        }

        @Override
        public long deadlineNanos() {
            return deadline;
        }

        @Override
        public boolean answered() {
            return answered.get();
        }

        @Override
        public void run() {
            try {
                setup.handler().startContainer(pod, container, this);
            } catch (RuntimeException e) {
                LOG.warn("NRI: the StartContainer handler failed for container {}: {}", Printable.of(container.id()),
                        Printable.of(String.valueOf(e)));
            } finally {
                // The permit goes back before the answer: the runtime's next call, which only the answer lets it
                // send, must find this thread free.
                setup.callPermits().release();
                answerNow();
            }
        }

        void notServed(String why) {
            try {
                setup.handler().notServed(pod, container, why);
            } catch (RuntimeException e) {
                LOG.warn("NRI: the notServed handler failed: {}", Printable.of(String.valueOf(e)));
            }
            answerNow();
        }

        @Override
        public void answerNow() {
            if (!answered.compareAndSet(false, true)) {
                return;
            }
            ScheduledFuture<?> timer = deadlineAnswer;
            if (timer != null) {
                timer.cancel(false);
            }
            try {
                NriSession.this.answer(streamId, EMPTY);
            } catch (IOException e) {
                // The connection broke: the reading thread sees it too, and the plugin connects again.
                LOG.debug("NRI: StartContainer answer not sent: {}", e.toString());
            }
        }
    }
}
