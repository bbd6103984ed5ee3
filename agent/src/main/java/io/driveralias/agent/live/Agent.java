package io.driveralias.agent.live;

import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.core.LruMap;
import io.driveralias.agent.http.AgentStatus;
import io.driveralias.agent.live.ExaminationReporter.Reported;
import io.driveralias.agent.metrics.RepairMetrics;
import io.driveralias.agent.repair.RootRepairer;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node daemon: container events and reconciles feed one queue (one entry per container);
 * a small fixed pool of workers examines and repairs, and each examination is handed to the
 * reporter. A container is verified once per start; one that could not be repaired is tried
 * again at every reconcile. After every (re)connect of the event stream all running
 * containers are queued, since events were missed; a periodic reconcile queues only those not
 * yet verified. A ping with a short timeout notices a daemon that stopped answering while its
 * event stream stays open.
 */
public final class Agent implements AgentStatus, AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(Agent.class);
    private static final int HISTORY_CAPACITY = 16_384;
    /** While Docker does not answer, it is asked every second, to be ready soon after it does. */
    private static final Duration PING_INTERVAL_DOWN = Duration.ofSeconds(1);

    /**
     * @param createDelay  how long a created container waits for its start to join it (see
     *                     RepairQueue). None: with {@code docker run} the window to write the
     *                     aliases before the container's first instruction opens a few ms after
     *                     the create and closes some 150 ms later, so a create is taken at once
     * @param warmupRounds enough rounds for C1 to compile the repair path (see docs/footprint.md)
     */
    record Tuning(int queueCapacity, Duration createDelay, int warmupRounds, Duration pingInterval) {
        static final Tuning DEFAULT = new Tuning(10_000, Duration.ZERO, 300, Duration.ofSeconds(5));
    }

    private final Docker docker;
    private final ContainerEvents events;
    private final ContainerRepairer repairer;
    private final ExaminationReporter reporter;
    private final RepairMetrics metrics;
    private final Clock clock;
    private final Duration resyncInterval;
    private final Duration shutdownGrace;
    private final Tuning tuning;
    private final RepairQueue queue;
    /**
     * What was last reported for each container, kept past its die and destroy events (which
     * may arrive between a container's create and start jobs, or before a reconcile's job) so
     * that no start is counted twice. Bounded, least recently used out first.
     */
    private final Map<String, Reported> history = Collections.synchronizedMap(new LruMap<>(HISTORY_CAPACITY));
    private final List<Thread> workers = new ArrayList<>();
    private final ScheduledExecutorService reconciler = daemonScheduler("reconcile");
    private final ScheduledExecutorService pinger = daemonScheduler("docker-ping");
    private volatile boolean streamConnected;
    private volatile boolean answering = true;
    private volatile boolean reconciled;

    public Agent(Docker docker, ContainerEvents events, ContainerRepairer repairer, ExaminationReporter reporter,
                 RepairMetrics metrics, Clock clock, int workerCount, Duration resyncInterval, Duration shutdownGrace) {
        this(docker, events, repairer, reporter, metrics, clock, workerCount, resyncInterval, shutdownGrace,
                Tuning.DEFAULT);
    }

    Agent(Docker docker, ContainerEvents events, ContainerRepairer repairer, ExaminationReporter reporter,
          RepairMetrics metrics, Clock clock, int workerCount, Duration resyncInterval, Duration shutdownGrace,
          Tuning tuning) {
        this.tuning = tuning;
        this.queue = new RepairQueue(tuning.queueCapacity(), tuning.createDelay());
        this.docker = docker;
        this.events = events;
        this.repairer = repairer;
        this.reporter = reporter;
        this.metrics = metrics;
        this.clock = clock;
        this.resyncInterval = resyncInterval;
        this.shutdownGrace = shutdownGrace;
        for (int i = 0; i < workerCount; i++) {
            Thread worker = new Thread(this::work, "repair-" + i);
            worker.setDaemon(true);
            workers.add(worker);
        }
    }

    private static ScheduledExecutorService daemonScheduler(String name) {
        return Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        });
    }

    public void start() {
        metrics.dockerConnected(false);
        repairer.warmUp(tuning.warmupRounds());
        workers.forEach(Thread::start);
        events.start(new ContainerEvents.Listener() {
            @Override
            public void onEvent(String containerId, String action) {
                Agent.this.onEvent(containerId, action);
            }

            @Override
            public void onConnected() {
                streamConnected = true;
                answering = true;
                publishDockerUp();
                LOG.info("watching Docker events at {} (API {})", docker.host(), apiVersion());
                reconciler.execute(() -> reconcile(true));
            }

            @Override
            public void onDisconnected(String why) {
                streamConnected = false;
                publishDockerUp();
            }
        });
        long period = resyncInterval.toMillis();
        reconciler.scheduleWithFixedDelay(() -> reconcile(false), period, period, TimeUnit.MILLISECONDS);
        pinger.schedule(this::ping, tuning.pingInterval().toMillis(), TimeUnit.MILLISECONDS);
    }

    private String apiVersion() {
        try {
            return docker.apiVersion();
        } catch (DockerException e) {
            return "?";
        }
    }

    /** Every 5 s while Docker answers; every second while it does not, to be ready soon after. */
    private void ping() {
        boolean ok = docker.ping();
        try {
            pinger.schedule(this::ping, (ok ? tuning.pingInterval() : PING_INTERVAL_DOWN).toMillis(),
                    TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.RejectedExecutionException closing) {
            return;
        }
        if (ok != answering) {
            answering = ok;
            if (ok) {
                LOG.info("Docker at {} answers again", docker.host());
            } else {
                LOG.warn("Docker at {} does not answer a ping within its timeout: not ready until it does",
                        docker.host());
            }
            publishDockerUp();
        }
    }

    private void publishDockerUp() {
        metrics.dockerConnected(dockerUp());
    }

    private boolean dockerUp() {
        return streamConnected && answering;
    }

    private void onEvent(String containerId, String action) {
        metrics.dockerEvent(action);
        switch (action) {
            case "create", "start" -> {
                if (queue.offer(new RepairQueue.Job(containerId, clock.instant(), action)) == RepairQueue.Offer.FULL) {
                    // Not lost: the next reconcile finds the container running and unreported.
                    metrics.queueRefused(1);
                }
            }
            case "die", "destroy" -> metrics.resolved(containerId);
            default -> {
            }
        }
    }

    /**
     * Queues running containers: all of them after a (re)connect ({@code full}), else those
     * never reported or whose repair failed. Ends the unrepaired series of containers gone.
     */
    void reconcile(boolean full) {
        List<String> running;
        try {
            running = docker.runningContainerIds();
        } catch (DockerException e) {
            LOG.warn("reconcile: cannot list containers: {}", e.getMessage());
            return;
        }
        Instant now = clock.instant();
        Set<String> alive = new HashSet<>(running);
        List<String> failedGone = new ArrayList<>();
        synchronized (history) {
            history.forEach((id, r) -> {
                if (r.outcome() == ContainerOutcome.FAILED && !alive.contains(id)) {
                    failedGone.add(id);
                }
            });
        }
        failedGone.forEach(metrics::resolved);
        int queued = 0;
        int refused = 0;
        for (String id : running) {
            Reported r = history.get(id);
            if (full || r == null || r.outcome() == ContainerOutcome.FAILED) {
                switch (queue.offer(new RepairQueue.Job(id, now, "reconcile"))) {
                    case QUEUED -> queued++;
                    case FULL -> refused++;
                    default -> {
                    }
                }
            }
        }
        if (refused > 0) {
            LOG.warn("reconcile: queue full, {} container(s) left for the next reconcile", refused);
            metrics.queueRefused(refused);
        }
        metrics.reconcileSucceeded(clock.instant());
        if (!reconciled || full) {
            LOG.info("{} reconcile: {} running container(s), {} queued", reconciled ? "full" : "first",
                    running.size(), queued);
        }
        reconciled = true;
    }

    private void work() {
        while (true) {
            RepairQueue.Job job;
            try {
                job = queue.take();
            } catch (InterruptedException e) {
                return;
            }
            if (job == null) {
                return;
            }
            try {
                examine(job);
            } catch (RuntimeException e) {
                // One bad container never stops a worker.
                LOG.error("unexpected error examining container {}", job.containerId(), e);
            } finally {
                queue.done(job.containerId());
            }
        }
    }

    private void examine(RepairQueue.Job job) {
        if (job.trigger().equals("create") && repairer.seedWhileStarting(job.containerId(), job.receivedAt())) {
            // Nothing to report before the start; its start job verifies.
            return;
        }
        Optional<Reported> previous = Optional.ofNullable(history.get(job.containerId()));
        // A start is examined once (create and start events of one container); a reconcile
        // retries a container whose repair failed.
        boolean retry = job.trigger().equals("reconcile")
                && previous.map(r -> r.outcome() == ContainerOutcome.FAILED).orElse(false);
        Optional<Examination> result;
        try {
            result = repairer.examine(job.containerId(), job.receivedAt(), RootRepairer.Mode.APPLY,
                    previous.flatMap(Reported::startedAt), retry);
        } catch (DockerException e) {
            // Docker is unreachable or failing: the reconcile after the reconnect brings it back.
            LOG.debug("container {}: Docker did not answer: {}", job.containerId(), e.getMessage());
            return;
        }
        if (result.isEmpty()) {
            return;
        }
        Examination e = result.get();
        String id = e.container().id().isEmpty() ? job.containerId() : e.container().id();
        if (e.outcome() == ContainerOutcome.GONE && previous.isPresent()
                && (e.startedAt().isEmpty() || e.startedAt().equals(previous.get().startedAt()))) {
            // The start already reported has ended: nothing new to count.
            metrics.resolved(id);
            return;
        }
        history.put(id, reporter.report(e, previous));
    }

    @Override
    public boolean alive() {
        return events.alive() && workers.stream().anyMatch(Thread::isAlive);
    }

    @Override
    public boolean ready() {
        return reconciled && dockerUp();
    }

    /** Stops taking events, lets repairs in flight finish (bounded by the grace), then stops. */
    @Override
    public void close() {
        events.close();
        reconciler.shutdownNow();
        pinger.shutdownNow();
        queue.close();
        long deadline = System.nanoTime() + shutdownGrace.toNanos();
        for (Thread worker : workers) {
            long left = Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
            try {
                worker.join(left);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
