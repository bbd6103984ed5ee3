package io.driveralias.agent.docker;

import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.live.ContainerRuntime;
import io.driveralias.agent.live.ContainerRuntimeException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Docker's containerd for the Docker adapter's tests: it answers (or not), holds snapshots given
 * with {@link #injectLayers}, and hands out subscriptions fed by {@link #injectProcess} and broken
 * by {@link #injectBreak}.
 */
final class FakeDockerContainerd implements DockerContainerd {

    private static final Object BREAK = new Object();

    private final String address;
    private final String namespace;
    private volatile boolean answers = true;
    private volatile boolean closed;
    private final Map<String, ContainerInfo.OverlayLayers> layers = new ConcurrentHashMap<>();
    private final List<LinkedBlockingQueue<Object>> subscriptions = new ArrayList<>();
    private final AtomicInteger subscribeFailures = new AtomicInteger();

    FakeDockerContainerd(String address, String namespace) {
        this.address = address;
        this.namespace = namespace;
    }

    String namespace() {
        return namespace;
    }

    boolean isClosed() {
        return closed;
    }

    FakeDockerContainerd injectSilence() {
        answers = false;
        return this;
    }

    void injectLayers(String id, ContainerInfo.OverlayLayers l) {
        layers.put(id, l);
    }

    /** The next {@code n} subscriptions fail. */
    void injectSubscribeFailures(int n) {
        subscribeFailures.set(n);
    }

    /** A process created, to every open subscription. */
    synchronized void injectProcess(String id, int pid) {
        subscriptions.forEach(q -> q.add(new ContainerRuntime.Event(id, ContainerRuntime.Action.PROCESS_CREATED, "/tasks/create",
                "", pid)));
    }

    /** Every open subscription breaks. */
    synchronized void injectBreak() {
        subscriptions.forEach(q -> q.add(BREAK));
        subscriptions.clear();
    }

    synchronized int subscriptions() {
        return subscriptions.size();
    }

    @Override
    public String address() {
        return address;
    }

    @Override
    public String version() throws ContainerRuntimeException {
        if (!answers) {
            throw new ContainerRuntimeException.Unreachable("no answer", null);
        }
        return "containerd 2.1.9";
    }

    @Override
    public Optional<ContainerInfo.OverlayLayers> layers(String snapshotter, String containerId) {
        return Optional.ofNullable(layers.get(containerId));
    }

    @Override
    public synchronized ContainerRuntime.EventStream processCreations() throws ContainerRuntimeException {
        if (subscribeFailures.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
            throw new ContainerRuntimeException.Unreachable("containerd is restarting", null);
        }
        LinkedBlockingQueue<Object> queue = new LinkedBlockingQueue<>();
        subscriptions.add(queue);
        return new ContainerRuntime.EventStream() {
            @Override
            public Optional<ContainerRuntime.Event> next() throws ContainerRuntimeException {
                Object item;
                try {
                    item = queue.take();
                } catch (InterruptedException e) {
                    return Optional.empty();
                }
                if (item == BREAK) {
                    throw new ContainerRuntimeException.Unreachable("containerd went away", null);
                }
                return Optional.of((ContainerRuntime.Event) item);
            }

            @Override
            public void close() {
                queue.add(BREAK);
            }
        };
    }

    @Override
    public void close() {
        closed = true;
    }
}
