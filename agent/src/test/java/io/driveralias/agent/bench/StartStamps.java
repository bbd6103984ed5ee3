package io.driveralias.agent.bench;

import io.driveralias.agent.nri.NriContainer;
import io.driveralias.agent.nri.NriHandler;
import io.driveralias.agent.nri.NriPod;
import io.driveralias.agent.nri.NriRuntimeInfo;
import io.driveralias.agent.nri.NriSync;
import io.driveralias.agent.nri.StartCall;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An NRI handler that answers every StartContainer at once and notes, by container id, when the
 * request's first byte was read and when the handler returned (the answer follows within
 * microseconds): the plugins around the measured one, and the plugin that answers at once.
 */
final class StartStamps implements NriHandler {

    /** {@link System#nanoTime()} when the request was read and when the handler returned. */
    record Stamp(long receivedNanos, long returnedNanos) {
    }

    private final Map<String, Stamp> byContainer = new ConcurrentHashMap<>();
    private final boolean wantsStarts;

    StartStamps() {
        this(true);
    }

    private StartStamps(boolean wantsStarts) {
        this.wantsStarts = wantsStarts;
    }

    /** A plugin that stamps nothing and answers every start from its reading thread: the least a plugin can do. */
    static StartStamps atOnce() {
        return new StartStamps(false);
    }

    @Override
    public boolean wantsStart(NriPod pod, NriContainer container) {
        return wantsStarts;
    }

    Optional<Stamp> of(String containerId) {
        return Optional.ofNullable(byContainer.get(containerId));
    }

    /** Forgets the stamps of containers measured already (a long run keeps no more than a block's). */
    void clear() {
        byContainer.clear();
    }

    @Override
    public void connected(NriRuntimeInfo runtime) {
    }

    @Override
    public void disconnected(String why) {
    }

    @Override
    public void synchronize(NriSync part) {
    }

    @Override
    public void startContainer(NriPod pod, NriContainer container, StartCall call) {
        byContainer.put(container.id(), new Stamp(call.receivedNanos(), System.nanoTime()));
    }

    @Override
    public void notServed(NriPod pod, NriContainer container, String why) {
    }
}
