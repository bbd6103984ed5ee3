package io.driveralias.agent.live;

import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.live.ExaminationReporter.Reported;
import io.driveralias.agent.metrics.RepairMetrics;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One watched runtime's connection state, events, pings and reconciles: its events become jobs
 * on the agent's one queue, each (re)connect a full reconcile (events were missed), each periodic
 * one the containers never reported or not repaired.
 */
final class RuntimeWatch implements ContainerEvents.Listener {

    private static final Logger LOG = LoggerFactory.getLogger(Agent.class);
    /** While a runtime does not answer, it is asked every 250 ms, to be ready soon after it does. */
    private static final Duration PING_INTERVAL_DOWN = Duration.ofMillis(250);

    /** What the agent shares with each of its runtimes' watches. */
    record Shared(RepairQueue queue, Map<RepairQueue.Key, Reported> history, RepairMetrics metrics, Clock clock,
                  ScheduledExecutorService reconciler, ScheduledExecutorService pinger, Agent.Tuning tuning,
                  Runnable afterReconcile, NriPlain nriPlain) {
    }

    final Agent.Watched watched;
    private final RepairQueue queue;
    private final Map<RepairQueue.Key, Reported> history;
    private final RepairMetrics metrics;
    private final Clock clock;
    private final ScheduledExecutorService reconciler;
    private final ScheduledExecutorService pinger;
    private final Agent.Tuning tuning;
    private final NriPlain nriPlain;
    private final Runnable afterReconcile;
    private volatile boolean streamConnected;
    private volatile boolean answering = true;
    volatile boolean reconciled;
    private boolean warmedUp;

    RuntimeWatch(Agent.Watched watched, Shared shared) {
        this.watched = watched;
        this.queue = shared.queue();
        this.history = shared.history();
        this.metrics = shared.metrics();
        this.clock = shared.clock();
        this.reconciler = shared.reconciler();
        this.pinger = shared.pinger();
        this.tuning = shared.tuning();
        this.nriPlain = shared.nriPlain();
        this.afterReconcile = shared.afterReconcile();
    }

    String name() {
        return watched.runtime().name();
    }

    String display() {
        return ContainerRuntime.displayName(name());
    }

    void start() {
        watched.events().start(this);
        pinger.schedule(this::ping, tuning.pingInterval().toMillis(), TimeUnit.MILLISECONDS);
    }

    boolean up() {
        return streamConnected && answering;
    }

    void publishUp() {
        metrics.runtimeConnected(name(), up());
    }

    @Override
    public void onEvent(ContainerRuntime.Event event) {
        LOG.debug("{} event {} for {}", display(), event.runtimeAction(), event.containerId());
        metrics.runtimeEvent(name(), event.runtimeAction());
        RepairQueue.Key key = new RepairQueue.Key(name(), event.containerId());
        switch (event.action()) {
            case CREATED -> {
                if (!nriPlain.leftToNri(key)) {
                    offer(event.containerId(), "create", 0);
                }
            }
            case PROCESS_CREATED, STARTED -> {
                if (!nriPlain.leftToNri(key)) {
                    // A start with nothing to write (its create found it excluded or asking for no GPU)
                    // waits behind other containers' creates; it is only to be counted.
                    offer(event.containerId(), watched.repairer().plainStart(event.containerId()) ? RepairQueue.PLAIN_START : "start",
                            event.pid());
                }
            }
            case EXITED -> metrics.gone(event.containerId());
            case REMOVED -> {
                nriPlain.forget(key);
                watched.repairer().forget(event.containerId());
                metrics.gone(event.containerId());
            }
        }
    }

    private void offer(String id, String trigger, int pid) {
        if (queue.offer(new RepairQueue.Job(new RepairQueue.Key(name(), id), clock.instant(), trigger, pid))
                == RepairQueue.Offer.FULL) {
            // Not lost: the next reconcile finds the container running and unreported.
            metrics.queueRefused(1);
        }
    }

    @Override
    public void onConnected(String api) {
        streamConnected = true;
        answering = true;
        publishUp();
        LOG.info("watching {} events at {} ({})", display(), watched.runtime().endpoint(), api);
        reconciler.execute(() -> {
            if (!warmedUp && tuning.warmupRounds() > 0) {
                // Before the first reconcile, and so before the agent says it is ready: a
                // runtime's first descriptions cost hundreds of ms cold (containerd: about
                // 230 ms a call), which a container started right after would pay.
                watched.runtime().warmUp();
                warmedUp = true;
            }
            reconcile(true);
        });
    }

    @Override
    public void onDisconnected(String why) {
        streamConnected = false;
        publishUp();
    }

    /** Every 5 s while the runtime answers; every 250 ms while it does not, to be ready soon after (a refused local connect costs nothing). */
    private void ping() {
        boolean ok = watched.runtime().ping();
        try {
            pinger.schedule(this::ping, (ok ? tuning.pingInterval() : PING_INTERVAL_DOWN).toMillis(),
                    TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.RejectedExecutionException closing) {
            return;
        }
        if (ok != answering) {
            answering = ok;
            if (ok) {
                LOG.info("{} at {} answers again", display(), watched.runtime().endpoint());
                // What it left unanswered meanwhile (its event stream may never have broken): now, not at the next resync.
                reconciler.execute(() -> reconcile(false));
            } else {
                LOG.warn("{} at {} does not answer a ping within its timeout: not ready until it does", display(),
                        watched.runtime().endpoint());
            }
            publishUp();
        }
    }

    /**
     * Queues running containers: all of them after a (re)connect ({@code full}), else those
     * never reported or whose repair failed. A container whose repair failed is retried even
     * where the list no longer calls it running: a list can be stale (Docker's, on a full
     * disk), so each is judged by its own description and process, and only one found gone
     * loses its unrepaired series.
     */
    void reconcile(boolean full) {
        List<String> running;
        try {
            running = watched.runtime().runningContainerIds();
        } catch (ContainerRuntimeException e) {
            LOG.warn("reconcile: cannot list {} containers: {}", display(), e.getMessage());
            return;
        }
        Instant now = clock.instant();
        Set<String> toExamine = new LinkedHashSet<>(running);
        synchronized (history) {
            history.forEach((key, r) -> {
                if (key.runtime().equals(name()) && r.outcome() == ContainerOutcome.FAILED) {
                    toExamine.add(key.containerId());
                }
            });
        }
        int queued = 0;
        int refused = 0;
        for (String id : toExamine) {
            RepairQueue.Key key = new RepairQueue.Key(name(), id);
            if (nriPlain.leftToNri(key)) {
                // NRI's: counted at its StartContainer, which may be in progress (its task listed, its process
                // there); a reconcile that examined it then counted it a second time.
                continue;
            }
            Reported r = history.get(key);
            if (full || r == null || r.outcome() == ContainerOutcome.FAILED) {
                switch (queue.offer(new RepairQueue.Job(key, now, "reconcile"))) {
                    case QUEUED -> queued++;
                    case FULL -> refused++;
                    default -> {
                    }
                }
            }
        }
        if (refused > 0) {
            LOG.warn("reconcile: queue full, {} {} container(s) left for the next reconcile", refused, display());
            metrics.queueRefused(refused);
        }
        metrics.reconcileSucceeded(clock.instant());
        if (!reconciled || full) {
            LOG.info("{} reconcile: {} running container(s), {} queued ({})", reconciled ? "full" : "first",
                    running.size(), queued, name());
        }
        reconciled = true;
        afterReconcile.run();
    }
}
