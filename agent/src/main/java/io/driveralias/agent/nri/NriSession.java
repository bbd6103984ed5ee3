package io.driveralias.agent.nri;

import com.google.protobuf.ByteString;
import com.google.protobuf.MessageLite;
import io.driveralias.agent.core.Printable;
import io.driveralias.agent.nri.MuxReader.Message;
import io.driveralias.agent.nri.PluginMessages.Call;
import io.driveralias.agent.nri.PluginMessages.Method;
import io.driveralias.agent.nri.PluginMessages.Configure;
import io.driveralias.agent.nri.PluginMessages.PodAndContainer;
import io.driveralias.agent.nri.PluginMessages.StateChange;
import io.driveralias.agent.nri.api.ConfigureResponse;
import io.driveralias.agent.nri.api.RegisterPluginRequest;
import io.driveralias.agent.nri.api.RpcStatus;
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
 * thread, answers every call of the Plugin service, and hands StartContainer (the dedicated call of
 * NRI 0.12 and the {@code StateChange} of older runtimes alike) to the call threads under a
 * deadline. Every answer to a method the plugin implements is a success: an error would fail the
 * pod's start, and a plugin that adjusts nothing has nothing to refuse. A method it does not
 * implement is answered with ttrpc's {@code Unimplemented}, as the runtime's own ttrpc server
 * would, so that a runtime that has an older form of the call uses it. Whatever ends the connection
 * (the runtime closing it, a protocol error, a failure of the plugin's own code on this thread,
 * {@link #end} from the plugin's watchdog or close) ends {@link #serve()}.
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
    /** A write blocked this long, or a message begun and not finished: the runtime is stuck; the connection is made again. */
    static final Duration STALL = Duration.ofSeconds(5);
    /**
     * The NRI API the plugin speaks, sent with RegisterPlugin (NRI 0.12's runtimes log it): the
     * dedicated StartContainer call, with StateChange still served for the runtimes before it.
     */
    static final String NRI_VERSION = "v0.12.0";
    /** The longest request timeout taken from Configure: anything longer serves no deadline, and overflows arithmetic. */
    static final Duration MAX_REQUEST_TIMEOUT = Duration.ofHours(1);
    /** A message bigger than this leaves its pages resident in the message buffer: they are given back after it. */
    static final int RESIDENT_MESSAGE = 64 << 10;

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
    /** What this session logged once already: a second Configure, an unimplemented method, a call before Configure. */
    private boolean reconfigureLogged;
    private boolean unimplementedLogged;
    private boolean earlyCallLogged;

    NriSession(SocketChannel channel, MuxReader reader, Setup setup) {
        this.channel = channel;
        this.reader = reader;
        this.writer = new MuxWriter(channel);
        this.setup = setup;
    }

    /** Registers, then serves until the connection ends; returns why it ended. */
    String serve() {
        try {
            byte[] register = RegisterPluginRequest.newBuilder().setPluginName(setup.name()).setPluginIdx(setup.index())
                    .setNriVersion(NRI_VERSION).build().toByteArray();
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
                if (message.length() > RESIDENT_MESSAGE) {
                    // Decoded and answered: nothing refers to its bytes any more.
                    UntouchedBuffers.release(message.body(), RESIDENT_MESSAGE, message.length());
                }
            }
        } catch (NriProtocolException e) {
            return ended("protocol error: " + e.getMessage());
        } catch (IOException e) {
            return ended("connection error: " + e);
        } catch (RuntimeException e) {
            // The plugin's own failure (a bug, or an input no test foresaw): this session ends as a lost
            // connection would, and the plugin connects again, rather than its thread dying unnoticed.
            LOG.error("NRI: the plugin failed on the runtime's input; connecting again", e);
            return ended("the plugin failed: " + e);
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

    /**
     * The plugin's watchdog, about twice a second: a runtime that never configures the plugin,
     * stopped reading, or began a message it does not finish (the reading thread would wait for
     * the rest forever).
     */
    void watch() {
        if (!configured && System.nanoTime() - openedNanos > REGISTRATION.toNanos()) {
            end("the runtime did not configure the plugin within " + REGISTRATION.toSeconds() + " s of connecting");
        } else if (writer.stalledNanos() > STALL.toNanos()) {
            end("the runtime has not read the plugin's answers for " + STALL.toSeconds() + " s");
        } else if (reader.unfinishedNanos() > STALL.toNanos()) {
            end("the runtime began a message and has not finished it for " + STALL.toSeconds() + " s");
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
        if (!configured && call.method() != Method.CONFIGURE && call.method() != Method.OTHER && !earlyCallLogged) {
            earlyCallLogged = true;
            LOG.warn("NRI: the runtime called {} before Configure; served with NRI's default timeout", call.label());
        }
        ProtoReader payload = message.reader().reader(call.payload());
        switch (call.method()) {
            case CONFIGURE -> configure(message, PluginMessages.configure(payload));
            case SYNCHRONIZE -> synchronize(message, PluginMessages.synchronize(payload));
            case CREATE_CONTAINER -> created(message, PluginMessages.podAndContainer(payload));
            case START_CONTAINER -> {
                PodAndContainer start = PluginMessages.podAndContainer(payload);
                start(message, call, start.pod(), start.container());
            }
            case STATE_CHANGE -> {
                StateChange event = PluginMessages.stateChange(payload);
                if (event.event() == PluginMessages.START_CONTAINER) {
                    start(message, call, event.pod(), event.container());
                } else {
                    // An event the plugin did not subscribe to: nothing to do, and StateChange itself is implemented.
                    answer(message.streamId(), EMPTY);
                }
            }
            case SHUTDOWN -> {
                LOG.info("NRI: the runtime is shutting down");
                answer(message.streamId(), EMPTY);
            }
            case OTHER -> unimplemented(message, call);
        }
    }

    /** As the runtime's own ttrpc server answers a method it does not have: code 12, "method NAME". */
    private void unimplemented(Message message, Call call) throws IOException {
        if (!unimplementedLogged) {
            unimplementedLogged = true;
            LOG.info("NRI: the runtime called {}, which the plugin does not implement: answered Unimplemented (further ones at"
                    + " debug level)", Printable.of(call.label()));
        } else {
            LOG.debug("NRI: {} answered Unimplemented", Printable.of(call.label()));
        }
        writer.send(MuxReader.PLUGIN_CONNECTION, message.streamId(), MuxReader.RESPONSE, TtrpcResponse.newBuilder()
                .setStatus(RpcStatus.newBuilder().setCode(PluginMessages.UNIMPLEMENTED).setMessage(call.unimplemented()))
                .build().toByteArray());
    }

    private void configure(Message message, Configure configure) throws IOException {
        Duration timeout = requestTimeout(configure.requestTimeoutMs());
        answer(message.streamId(), ConfigureResponse.newBuilder().setEvents(EVENTS).build());
        requestTimeout = timeout;
        if (configured) {
            // A confused runtime: the new timeout counts from here, and the handler heard of this connection once.
            if (!reconfigureLogged) {
                reconfigureLogged = true;
                LOG.warn("NRI: the runtime configured the plugin again on the same connection (request timeout now {} ms)",
                        timeout.toMillis());
            }
            return;
        }
        configured = true;
        if (!registered) {
            LOG.debug("NRI: Configure came before the answer to RegisterPlugin");
        }
        setup.handler().connected(new NriRuntimeInfo(configure.runtimeName(), configure.runtimeVersion(), configure.nriVersion(),
                timeout));
    }

    /** Configure's request timeout, or NRI's default where it gives none (containerd 1.7), at most {@link #MAX_REQUEST_TIMEOUT}. */
    private static Duration requestTimeout(long ms) {
        if (ms <= 0) {
            LOG.debug("NRI: no request timeout in Configure; NRI's default of {} ms assumed",
                    StartDeadline.RUNTIME_DEFAULT_TIMEOUT.toMillis());
            return StartDeadline.RUNTIME_DEFAULT_TIMEOUT;
        }
        if (ms > MAX_REQUEST_TIMEOUT.toMillis()) {
            LOG.debug("NRI: a request timeout of {} ms in Configure, taken as {} ms", ms, MAX_REQUEST_TIMEOUT.toMillis());
            return MAX_REQUEST_TIMEOUT;
        }
        return Duration.ofMillis(ms);
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
    private void created(Message message, PodAndContainer create) throws IOException {
        if (create.container() != null) {
            try {
                setup.handler().createContainer(create.pod(), create.container());
            } catch (RuntimeException e) {
                LOG.warn("NRI: the CreateContainer handler failed: {}", Printable.of(String.valueOf(e)));
            }
        }
        answer(message.streamId(), EMPTY);
    }

    /**
     * A StartContainer, in either of its forms (the answer to both is empty: StartContainerResponse
     * and Empty have no fields): answered from this thread when the handler does not want it, else
     * handed to a call thread and answered when the handler returns or at the deadline.
     */
    private void start(Message message, Call call, NriPod pod, NriContainer container) throws IOException {
        if (container == null) {
            answer(message.streamId(), EMPTY);
            return;
        }
        if (!wanted(pod, container)) {
            answer(message.streamId(), EMPTY);
            try {
                setup.handler().answeredAtOnce(pod, container);
            } catch (RuntimeException e) {
                LOG.warn("NRI: the handler failed after a start answered at once: {}", Printable.of(String.valueOf(e)));
            }
            return;
        }
        long allowed = setup.deadline().nanos(requestTimeout, call.timeoutNano());
        Start start = new Start(message.streamId(), pod, container, message.arrivalNanos(), allowed);
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

    private boolean wanted(NriPod pod, NriContainer container) {
        try {
            return setup.handler().wantsStart(pod, container);
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
