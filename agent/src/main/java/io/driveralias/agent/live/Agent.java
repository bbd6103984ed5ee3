package io.driveralias.agent.live;

import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.docker.DockerApi;
import io.driveralias.agent.docker.DockerException;
import io.driveralias.agent.http.AgentStatus;
import io.driveralias.agent.metrics.RepairMetrics;
import io.driveralias.agent.repair.RootRepairer;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import io.driveralias.agent.core.LruMap;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node daemon: container events and periodic reconciles feed one queue (one entry per
 * container); a small fixed pool of workers examines and repairs. A container is verified
 * once per start; one that could not be repaired is tried again at every reconcile.
 */
public final class Agent implements AgentStatus, AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(Agent.class);
    private static final int QUEUE_CAPACITY = 10_000;
    /** How long a created container waits for its start to join it (see RepairQueue). */
    private static final Duration CREATE_DELAY = Duration.ofMillis(250);
    /** Enough rounds for C1 to compile the repair path (see docs/footprint.md). */
    private static final int WARMUP_ROUNDS = 300;

    /** What the agent knows of a container between examinations. */
    private record Known(boolean verified, Optional<Instant> startedAt) {
    }

    private final DockerApi docker;
    private final ContainerEvents events;
    private final ContainerRepairer repairer;
    private final RepairMetrics metrics;
    private final Clock clock;
    private final Duration resyncInterval;
    private final Duration shutdownGrace;
    private final RepairQueue queue = new RepairQueue(QUEUE_CAPACITY, CREATE_DELAY);
    private final Map<String, Known> known = new ConcurrentHashMap<>();
    /**
     * The start each container was last examined for, kept past its die and destroy events
     * (which may arrive between a container's create and start jobs) so that no start is
     * counted twice. Bounded, oldest out first.
     */
    private final Map<String, Instant> examinedStarts = Collections.synchronizedMap(new LruMap<>(8192));
    private final List<Thread> workers = new ArrayList<>();
    private final ScheduledExecutorService reconciler = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "reconcile");
        t.setDaemon(true);
        return t;
    });
    private volatile boolean dockerUp;
    private volatile boolean reconciled;

    public Agent(DockerApi docker, ContainerEvents events, ContainerRepairer repairer, RepairMetrics metrics,
                 Clock clock, int workerCount, Duration resyncInterval, Duration shutdownGrace) {
        this.docker = docker;
        this.events = events;
        this.repairer = repairer;
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

    public void start() {
        metrics.dockerConnected(false);
        repairer.warmUp(WARMUP_ROUNDS);
        workers.forEach(Thread::start);
        events.start(new ContainerEvents.Listener() {
            @Override
            public void onEvent(String containerId, String action) {
                Agent.this.onEvent(containerId, action);
            }

            @Override
            public void onConnected() {
                dockerUp = true;
                metrics.dockerConnected(true);
                LOG.info("watching Docker events at {} (API {})", docker.host(), apiVersion());
                reconciler.execute(Agent.this::reconcile);
            }

            @Override
            public void onDisconnected(String why) {
                dockerUp = false;
                metrics.dockerConnected(false);
            }
        });
        long period = resyncInterval.toMillis();
        reconciler.scheduleWithFixedDelay(this::reconcile, period, period, TimeUnit.MILLISECONDS);
    }

    private String apiVersion() {
        try {
            return docker.apiVersion();
        } catch (DockerException e) {
            return "?";
        }
    }

    private void onEvent(String containerId, String action) {
        metrics.dockerEvent(action);
        switch (action) {
            case "create", "start" -> queue.offer(new RepairQueue.Job(containerId, clock.instant(), action));
            case "die", "destroy" -> forget(containerId);
            default -> {
            }
        }
    }

    private void forget(String containerId) {
        if (known.remove(containerId) != null) {
            metrics.resolved(containerId);
        }
    }

    /** Queues every running container not verified for its current start; forgets the rest. */
    void reconcile() {
        List<String> running;
        try {
            running = docker.runningContainerIds();
        } catch (DockerException e) {
            LOG.warn("reconcile: cannot list containers: {}", e.getMessage());
            return;
        }
        Instant now = clock.instant();
        Set<String> alive = new HashSet<>(running);
        for (String id : List.copyOf(known.keySet())) {
            if (!alive.contains(id)) {
                forget(id);
            }
        }
        int queued = 0;
        for (String id : running) {
            Known k = known.get(id);
            if ((k == null || !k.verified()) && queue.offer(new RepairQueue.Job(id, now, "reconcile"))) {
                queued++;
            }
        }
        metrics.reconcileSucceeded(clock.instant());
        if (!reconciled) {
            LOG.info("first reconcile: {} running container(s), {} queued", running.size(), queued);
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
        Known k = known.get(job.containerId());
        // A start is examined once (create and start events of one container); only the
        // reconcile retries a container that could not be repaired.
        boolean retry = job.trigger().equals("reconcile");
        Optional<Instant> examinedStart = retry
                ? (k != null && k.verified() ? k.startedAt() : Optional.empty())
                : Optional.ofNullable(examinedStarts.get(job.containerId()));
        Optional<Examination> result;
        try {
            result = repairer.examine(job.containerId(), job.receivedAt(), RootRepairer.Mode.APPLY, examinedStart);
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
        e.startedAt().ifPresent(start -> examinedStarts.put(id, start));
        switch (e.outcome()) {
            case REPAIRED, HEALTHY, NO_DRIVER, EXCLUDED -> known.put(id, new Known(true, e.startedAt()));
            case FAILED -> known.put(id, new Known(false, e.startedAt()));
            case GONE -> known.remove(id);
        }
        if (e.outcome() == ContainerOutcome.GONE) {
            metrics.resolved(id);
        }
    }

    @Override
    public boolean alive() {
        return events.alive() && workers.stream().anyMatch(Thread::isAlive);
    }

    @Override
    public boolean ready() {
        return reconciled && dockerUp;
    }

    /** Stops taking events, lets repairs in flight finish (bounded by the grace), then stops. */
    @Override
    public void close() {
        events.close();
        reconciler.shutdownNow();
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
