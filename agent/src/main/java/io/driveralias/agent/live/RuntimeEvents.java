package io.driveralias.agent.live;

import java.time.Duration;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A runtime's event stream, kept open: on any break it reconnects with capped exponential
 * backoff (100 ms doubling to 250 ms: a reconnect is one cheap local request, and a container
 * started while the agent waits is exposed until it is back; with a 1 s cap, readiness came up
 * to 2.04 s after a restarted containerd answered on a loaded machine), resumes with {@code since} the
 * last event it saw where the runtime replays (Docker keeps its last 256 events, containerd
 * none), and tells the listener, which reconciles.
 */
public final class RuntimeEvents implements ContainerEvents {

    private static final Logger LOG = LoggerFactory.getLogger(RuntimeEvents.class);
    private static final Duration FIRST_BACKOFF = Duration.ofMillis(100);
    private static final Duration MAX_BACKOFF = Duration.ofMillis(250);

    private final ContainerRuntime runtime;
    private final Thread thread;
    private volatile boolean running = true;
    private volatile ContainerRuntime.EventStream stream;
    private volatile String since;
    /** Whether the current try got as far as a subscription: the next outage starts a new backoff. */
    private boolean connected;
    private Listener listener;

    public RuntimeEvents(ContainerRuntime runtime) {
        this.runtime = runtime;
        this.thread = new Thread(this::loop, runtime.name() + "-events");
        this.thread.setDaemon(true);
    }

    @Override
    public void start(Listener listener) {
        this.listener = listener;
        thread.start();
    }

    @Override
    public boolean alive() {
        return running && thread.isAlive();
    }

    private void loop() {
        Duration backoff = FIRST_BACKOFF;
        while (running) {
            String why;
            connected = false;
            try {
                why = follow();
            } catch (ContainerRuntimeException e) {
                why = e.getMessage();
            } catch (RuntimeException e) {
                why = e.toString();
            }
            if (!running) {
                return;
            }
            if (connected) {
                backoff = FIRST_BACKOFF;
            }
            listener.onDisconnected(why);
            // Once per outage at WARN; the retries that follow only at DEBUG.
            if (backoff.equals(FIRST_BACKOFF)) {
                LOG.warn("{} event stream at {} lost ({}); reconnecting every {} ms until it answers",
                        ContainerRuntime.displayName(runtime.name()), runtime.endpoint(), why, MAX_BACKOFF.toMillis());
            } else {
                LOG.debug("{} at {} still unreachable ({}); next try in {} ms", ContainerRuntime.displayName(runtime.name()),
                        runtime.endpoint(), why, backoff.toMillis());
            }
            try {
                Thread.sleep(backoff);
            } catch (InterruptedException e) {
                return;
            }
            backoff = backoff.multipliedBy(2).compareTo(MAX_BACKOFF) > 0 ? MAX_BACKOFF : backoff.multipliedBy(2);
        }
    }

    /** One connection: subscribes, hands each event over at once, returns why it ended. */
    private String follow() throws ContainerRuntimeException {
        String api = runtime.connect();
        try (ContainerRuntime.EventStream s = runtime.events(Optional.ofNullable(since))) {
            stream = s;
            if (!running) {
                return "closed";
            }
            connected = true;
            listener.onConnected(api);
            for (Optional<ContainerRuntime.Event> next = s.next(); next.isPresent(); next = s.next()) {
                ContainerRuntime.Event event = next.get();
                if (!event.time().isEmpty()) {
                    since = event.time();
                }
                listener.onEvent(event);
            }
            return "stream ended";
        } finally {
            stream = null;
        }
    }

    @Override
    public void close() {
        running = false;
        ContainerRuntime.EventStream s = stream;
        if (s != null) {
            s.close();
        }
        thread.interrupt();
    }
}
