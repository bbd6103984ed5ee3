package io.driveralias.agent.docker;

import io.driveralias.agent.core.Printable;
import io.driveralias.agent.live.ContainerRuntime;
import io.driveralias.agent.live.ContainerRuntimeException;
import io.driveralias.agent.live.EventHandoff;
import java.time.Duration;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Docker's event stream with the creations of its containers' processes from Docker's containerd
 * merged in: one stream for the agent's event loop, which follows Docker. Docker's stream decides
 * its life: when it ends or breaks, so does this one (the loop reconnects to both and reconciles).
 * containerd's is a bonus, the moment a container's process exists, before runc starts it, which
 * Docker never tells: while it is down it is subscribed to again in the background (every second at
 * first, then every 5 s), and Docker's own {@code start} still comes for each container meanwhile.
 * Each source has a reader thread; at most {@link #CAPACITY} events wait, then the readers wait.
 */
final class MergedEvents implements ContainerRuntime.EventStream {

    /** Opens containerd's subscription; called again after it breaks. */
    @FunctionalInterface
    interface Subscriber {
        ContainerRuntime.EventStream subscribe() throws ContainerRuntimeException;
    }

    private static final Logger LOG = LoggerFactory.getLogger(MergedEvents.class);
    static final int CAPACITY = 256;
    private static final Duration FIRST_RETRY = Duration.ofSeconds(1);
    private static final Duration MAX_RETRY = Duration.ofSeconds(5);

    private final ContainerRuntime.EventStream docker;
    private final Subscriber containerd;
    private final String containerdAddress;
    /** The end is empty where Docker's stream ended, a failure where it broke. */
    private final EventHandoff<Optional<ContainerRuntimeException>> queue = EventHandoff.bounded(CAPACITY);
    private final Thread dockerReader;
    private final Thread containerdReader;
    private volatile ContainerRuntime.EventStream containerdStream;
    private volatile boolean closed;

    private MergedEvents(ContainerRuntime.EventStream docker, Subscriber containerd, String containerdAddress) {
        this.docker = docker;
        this.containerd = containerd;
        this.containerdAddress = containerdAddress;
        this.dockerReader = new Thread(this::readDocker, "docker-events");
        this.containerdReader = new Thread(this::readContainerd, "docker-containerd-events");
        dockerReader.setDaemon(true);
        containerdReader.setDaemon(true);
    }

    /** Docker's stream, open already, and containerd's, opened here in the background. */
    static MergedEvents start(ContainerRuntime.EventStream docker, Subscriber containerd, String containerdAddress) {
        MergedEvents merged = new MergedEvents(docker, containerd, containerdAddress);
        merged.dockerReader.start();
        merged.containerdReader.start();
        return merged;
    }

    @Override
    public Optional<ContainerRuntime.Event> next() throws ContainerRuntimeException {
        return queue.next(end -> {
            if (end.isPresent()) {
                throw end.get();
            }
        });
    }

    private void readDocker() {
        Optional<ContainerRuntimeException> last = Optional.empty();
        try {
            for (Optional<ContainerRuntime.Event> e = docker.next(); e.isPresent() && !closed; e = docker.next()) {
                queue.put(e.get());
            }
        } catch (ContainerRuntimeException e) {
            last = Optional.of(e);
        } catch (RuntimeException e) {
            last = Optional.of(new ContainerRuntimeException.Unreachable("event stream: " + e, e));
        } catch (InterruptedException e) {
            return;
        }
        try {
            // The end of Docker's stream is this one's, after the events queued before it.
            queue.putEnd(last);
        } catch (InterruptedException e) {
            // Closed meanwhile.
        }
    }

    /** Subscribes, reads until the subscription breaks, and again, until this stream is closed. */
    private void readContainerd() {
        Duration retry = FIRST_RETRY;
        boolean lost = false;
        while (!closed) {
            String why;
            try {
                ContainerRuntime.EventStream stream = containerd.subscribe();
                containerdStream = stream;
                if (closed) {
                    return;
                }
                if (lost) {
                    LOG.info("following Docker's containerd at {} again", containerdAddress);
                    lost = false;
                }
                retry = FIRST_RETRY;
                for (Optional<ContainerRuntime.Event> e = stream.next(); e.isPresent() && !closed; e = stream.next()) {
                    queue.put(e.get());
                }
                why = "stream ended";
            } catch (ContainerRuntimeException | RuntimeException e) {
                why = Printable.of(String.valueOf(e.getMessage()));
            } catch (InterruptedException e) {
                return;
            } finally {
                ContainerRuntime.EventStream s = containerdStream;
                containerdStream = null;
                if (s != null) {
                    s.close();
                }
            }
            if (closed) {
                return;
            }
            if (!lost) {
                LOG.warn("Docker's containerd at {}: its events are lost ({}); subscribing again every {} s at most;"
                        + " meanwhile containers are repaired at Docker's own events", containerdAddress, why,
                        MAX_RETRY.toSeconds());
                lost = true;
            }
            try {
                Thread.sleep(retry);
            } catch (InterruptedException e) {
                return;
            }
            retry = retry.multipliedBy(2).compareTo(MAX_RETRY) > 0 ? MAX_RETRY : retry.multipliedBy(2);
        }
    }

    @Override
    public void close() {
        closed = true;
        docker.close();
        ContainerRuntime.EventStream s = containerdStream;
        if (s != null) {
            s.close();
        }
        dockerReader.interrupt();
        containerdReader.interrupt();
    }
}
