package io.driveralias.agent.docker;

import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.model.Event;
import io.driveralias.agent.live.ContainerEvents;
import java.io.Closeable;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Docker's event stream, kept open: on any break it reconnects with capped exponential
 * backoff (100 ms doubling to 1 s: a reconnect is one cheap local request, and a container
 * started while the agent waits is exposed until it is back), resumes with {@code since} the last event it saw, and
 * tells the listener, which reconciles (Docker replays only its last 256 events).
 */
public final class DockerContainerEvents implements ContainerEvents {

    private static final Logger LOG = LoggerFactory.getLogger(DockerContainerEvents.class);
    private static final Duration FIRST_BACKOFF = Duration.ofMillis(100);
    private static final Duration MAX_BACKOFF = Duration.ofSeconds(1);

    private final DockerApi docker;
    private final Thread thread;
    private volatile boolean running = true;
    private volatile Closeable stream;
    private volatile String since;
    private Listener listener;

    public DockerContainerEvents(DockerApi docker) {
        this.docker = docker;
        this.thread = new Thread(this::loop, "docker-events");
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
            try {
                docker.negotiate();
                Subscription subscription = new Subscription();
                stream = docker.containerEvents(since, subscription);
                if (subscription.started.await(10, TimeUnit.SECONDS) && running) {
                    backoff = FIRST_BACKOFF;
                    listener.onConnected();
                }
                subscription.ended.await();
                why = subscription.why;
            } catch (DockerException e) {
                why = e.getMessage();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (RuntimeException e) {
                why = e.toString();
            }
            if (!running) {
                return;
            }
            listener.onDisconnected(why);
            // Once per outage at WARN; the retries that follow only at DEBUG.
            if (backoff.equals(FIRST_BACKOFF)) {
                LOG.warn("Docker event stream at {} lost ({}); reconnecting every {} ms until it answers", docker.host(),
                        why, MAX_BACKOFF.toMillis());
            } else {
                LOG.debug("Docker at {} still unreachable ({}); next try in {} ms", docker.host(), why, backoff.toMillis());
            }
            try {
                Thread.sleep(backoff);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            backoff = backoff.multipliedBy(2).compareTo(MAX_BACKOFF) > 0 ? MAX_BACKOFF : backoff.multipliedBy(2);
        }
    }

    /** One connection's callback: hands each event over at once, never blocks on repair work. */
    private final class Subscription extends ResultCallback.Adapter<Event> {
        final CountDownLatch started = new CountDownLatch(1);
        final CountDownLatch ended = new CountDownLatch(1);
        volatile String why = "stream ended";

        @Override
        public void onStart(Closeable closeable) {
            super.onStart(closeable);
            started.countDown();
        }

        @Override
        public void onNext(Event event) {
            if (event.getTimeNano() != null) {
                long nanos = event.getTimeNano();
                since = (nanos / 1_000_000_000L) + "." + String.format("%09d", nanos % 1_000_000_000L);
            }
            String id = event.getActor() != null && event.getActor().getId() != null
                    ? event.getActor().getId() : event.getId();
            String action = event.getAction() != null ? event.getAction() : event.getStatus();
            if (id != null && action != null) {
                listener.onEvent(id, action);
            }
        }

        @Override
        public void onError(Throwable throwable) {
            why = throwable.toString();
            started.countDown();
            ended.countDown();
        }

        @Override
        public void onComplete() {
            started.countDown();
            ended.countDown();
        }
    }

    @Override
    public void close() {
        running = false;
        Closeable s = stream;
        if (s != null) {
            try {
                s.close();
            } catch (IOException ignored) {
                // Closing the stream on shutdown.
            }
        }
        thread.interrupt();
    }
}
