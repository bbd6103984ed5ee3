package io.driveralias.agent.live;

import io.driveralias.agent.core.HostDriverState;
import io.driveralias.agent.metrics.RepairMetrics;
import io.driveralias.agent.repair.HostDriverFiles;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node's driver, looked at again every {@link #PERIOD}: the loaded kernel module's version
 * against the host's user-space driver files ({@link HostDriverState}). A change is said once in
 * the log and replaces the series of {@code driver_alias_host_driver_state}; readiness does not
 * follow it (the agent is not what is broken). The state is also what a GPU container's driver is
 * judged against ({@link #state}). Its cost: one read of the module's file and, at most every 30 s,
 * one look at the host's library directories (the files' SONAMEs are read once per file).
 */
public final class NodeDriver implements AutoCloseable {

    static final Duration PERIOD = Duration.ofSeconds(30);
    private static final Logger LOG = LoggerFactory.getLogger(NodeDriver.class);

    private final Supplier<Optional<String>> module;
    private final HostDriverFiles files;
    private final RepairMetrics metrics;
    private volatile HostDriverState state;
    private ScheduledExecutorService timer;

    /** @param module the loaded kernel module's version, read each time it is asked */
    public NodeDriver(Supplier<Optional<String>> module, HostDriverFiles files, RepairMetrics metrics) {
        this.module = module;
        this.files = files;
        this.metrics = metrics;
    }

    /** The state as last looked at; looked at now if never. */
    public HostDriverState state() {
        HostDriverState known = state;
        return known != null ? known : look();
    }

    /** Looks now: the module's file, the host's files if their last look is old enough. */
    public synchronized HostDriverState look() {
        files.refresh();
        HostDriverState now = HostDriverState.of(module.get(), files.userSpaceVersions());
        HostDriverState before = state;
        state = now;
        if (!now.equals(before)) {
            metrics.hostDriverState(now);
            announce(before, now);
        }
        return now;
    }

    /** Looks every {@link #PERIOD} on a thread of its own, the first time at once. */
    public synchronized void start() {
        if (timer == null) {
            timer = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "node-driver");
                t.setDaemon(true);
                return t;
            });
            timer.scheduleWithFixedDelay(this::lookQuietly, 0, PERIOD.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    private void lookQuietly() {
        try {
            look();
        } catch (RuntimeException e) {
            LOG.warn("the node's driver could not be looked at: {}", e.toString());
        }
    }

    private static void announce(HostDriverState before, HostDriverState now) {
        switch (now.state()) {
            case MISMATCH -> LOG.warn("{}", now.describe());
            case MATCH -> {
                if (before != null && before.state() != HostDriverState.State.MATCH) {
                    LOG.info("{} (was: {})", now.describe(), before.state().label());
                } else if (before != null) {
                    LOG.info("{} (was: {})", now.describe(), before.moduleVersion().orElse("?"));
                }
            }
            // The host's missing files have their own warning (HostDriverFiles).
            case NO_LIBRARIES -> LOG.debug("{}", now.describe());
            case NO_MODULE -> LOG.info("{}", now.describe());
        }
    }

    @Override
    public synchronized void close() {
        if (timer != null) {
            timer.shutdownNow();
            timer = null;
        }
    }
}
