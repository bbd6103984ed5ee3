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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node daemon: the events and reconciles of every watched runtime feed one queue (one
 * entry per container); a small fixed pool of workers examines and repairs, and each
 * examination is handed to the reporter. A container is verified once per start; one that
 * could not be repaired is tried again at every reconcile. After every (re)connect of a
 * runtime's event stream all its running containers are queued, since events were missed; a
 * periodic reconcile queues only those not yet verified. A ping with a short timeout notices a
 * runtime that stopped answering while its event stream stays open.
 */
public final class Agent implements AgentStatus, AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(Agent.class);
    private static final int HISTORY_CAPACITY = 16_384;

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

    /** One runtime the agent watches: its port, its event stream, and the repairer of its containers. */
    public record Watched(ContainerRuntime runtime, ContainerEvents events, ContainerRepairer repairer) {
    }

    private final Map<String, RuntimeWatch> runtimes = new LinkedHashMap<>();
    private final ExaminationReporter reporter;
    private final RepairMetrics metrics;
    private final Clock clock;
    private final Duration resyncInterval;
    private final Duration shutdownGrace;
    private final Tuning tuning;
    private final RepairQueue queue;
    /**
     * What was last reported for each container (by runtime and id), kept past its exit and
     * removal events (which may arrive between a container's create and start jobs, or before a
     * reconcile's job) so that no start is counted twice. Bounded, least recently used out first.
     */
    private final Map<RepairQueue.Key, Reported> history = Collections.synchronizedMap(new LruMap<>(HISTORY_CAPACITY));
    private final List<Thread> workers = new ArrayList<>();
    private final Thread warmUp;
    private final ScheduledExecutorService reconciler = daemonScheduler("reconcile");
    private final ScheduledExecutorService pinger = daemonScheduler("runtime-ping");
    private final OwnPodSearch ownPod;
    private final RuntimeErrors runtimeErrors;
    private final NriPlain nriPlain;
    /** Runtimes with a reconcile asked for (NRI's Synchronize) and not begun yet: asked again, it is not queued twice. */
    private final Set<String> reconcilesPending = ConcurrentHashMap.newKeySet();

    public Agent(List<Watched> watched, ExaminationReporter reporter, RepairMetrics metrics, Clock clock,
                 int workerCount, Duration resyncInterval, Duration shutdownGrace) {
        this(watched, reporter, metrics, clock, workerCount, resyncInterval, shutdownGrace, Tuning.DEFAULT, Optional.empty());
    }

    /** {@code podUid}: the agent's own pod, which a watched runtime must run before the agent is ready. */
    public Agent(List<Watched> watched, ExaminationReporter reporter, RepairMetrics metrics, Clock clock,
                 int workerCount, Duration resyncInterval, Duration shutdownGrace, Optional<String> podUid) {
        this(watched, reporter, metrics, clock, workerCount, resyncInterval, shutdownGrace, Tuning.DEFAULT, podUid);
    }

    Agent(List<Watched> watched, ExaminationReporter reporter, RepairMetrics metrics, Clock clock, int workerCount,
          Duration resyncInterval, Duration shutdownGrace, Tuning tuning, Optional<String> podUid) {
        if (watched.isEmpty()) {
            throw new IllegalArgumentException("no runtime to watch");
        }
        this.tuning = tuning;
        // One worker at least is never on creates and reconciles: a start never waits for a free one behind them.
        this.queue = new RepairQueue(tuning.queueCapacity(), tuning.createDelay(), Math.max(1, workerCount - 1));
        this.reporter = reporter;
        this.metrics = metrics;
        this.clock = clock;
        this.resyncInterval = resyncInterval;
        this.shutdownGrace = shutdownGrace;
        this.ownPod = new OwnPodSearch(podUid, runtimes.values(), metrics);
        this.runtimeErrors = new RuntimeErrors(queue, metrics);
        this.nriPlain = new NriPlain(history, metrics);
        RuntimeWatch.Shared shared = new RuntimeWatch.Shared(queue, history, metrics, clock, reconciler, pinger, tuning,
                ownPod::look, nriPlain);
        watched.forEach(w -> runtimes.put(w.runtime().name(), new RuntimeWatch(w, shared)));
        ContainerRepairer first = watched.getFirst().repairer();
        this.warmUp = new Thread(() -> first.warmUp(Math.max(0, tuning.warmupRounds() - 1),
                () -> queue.size() > 0 || queue.busy()), "warm-up");
        warmUp.setDaemon(true);
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
        runtimes.values().forEach(RuntimeWatch::publishUp);
        // One round before the watches: loading and linking classes and native calls, which a
        // first container would otherwise pay for (hundreds of ms). The rounds that let the
        // compiler in run beside the watches, so that readiness (the first reconcile) does not
        // wait for them: a container that starts meanwhile is repaired as ever, on interpreted code.
        runtimes.values().iterator().next().watched.repairer().warmUp(Math.min(1, tuning.warmupRounds()));
        warmUp.start();
        workers.forEach(Thread::start);
        runtimes.values().forEach(RuntimeWatch::start);
        long period = resyncInterval.toMillis();
        reconciler.scheduleWithFixedDelay(() -> runtimes.values().forEach(w -> w.reconcile(false)), period, period,
                TimeUnit.MILLISECONDS);
    }

    /** Queues the running containers of every runtime: see {@link RuntimeWatch#reconcile}. */
    void reconcile(boolean full) {
        runtimes.values().forEach(w -> w.reconcile(full));
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
                LOG.error("unexpected error examining container {}", job.key(), e);
            } finally {
                queue.done(job);
            }
        }
    }

    private void examine(RepairQueue.Job job) {
        if (LOG.isDebugEnabled()) {
            LOG.debug("{} job for {} taken {} ms after it arrived", job.trigger(), job.key(),
                    Duration.between(job.receivedAt(), clock.instant()).toMillis());
        }
        RuntimeWatch watch = runtimes.get(job.key().runtime());
        ContainerRepairer repairer = watch.watched.repairer();
        String id = job.key().containerId();
        if (job.trigger().equals("create")) {
            // Read beside its start, if that comes meanwhile; written only while the start was not
            // taken (RepairQueue#claimWrite), else the start does all the writing, without waiting.
            BooleanSupplier mayWrite = () -> queue.claimWrite(job);
            if (!repairer.seedsBeforeStart() || repairer.seedWhileStarting(id, job.receivedAt(), mayWrite)
                    || repairer.seedCreated(id, job.receivedAt(), mayWrite) || !mayWrite.getAsBoolean()) {
                // Nothing to report before the start; its start job verifies. Without repair before
                // start, a create has nothing to do (and a worker would only wait on a start in progress).
                return;
            }
        }
        examineAndReport(job.key(), job.trigger(), job.receivedAt(), job.pid(), () -> false, () -> { });
    }

    /**
     * Examines a container (not a create) and reports what came of it, once per start.
     * {@code answeredEarly}: asked after the examination, whether the runtime was told to go on
     * before it ended (NRI's deadline): a late repair then says so. {@code examined}: run once the
     * container is examined, before its report (NRI's answer: the log line, the metrics and the
     * pod's Event need not hold the node's pod starts; the container stays held until reported).
     */
    private void examineAndReport(RepairQueue.Key jobKey, String trigger, Instant receivedAt, int pid,
                                  BooleanSupplier answeredEarly, Runnable examined) {
        RuntimeWatch watch = runtimes.get(jobKey.runtime());
        ContainerRepairer repairer = watch.watched.repairer();
        String id = jobKey.containerId();
        Optional<Reported> previous = Optional.ofNullable(history.get(jobKey));
        // A start is examined once (create and start events of one container); a reconcile
        // retries a container whose repair failed.
        boolean retry = trigger.equals("reconcile")
                && previous.map(r -> r.outcome() == ContainerOutcome.FAILED).orElse(false);
        Optional<Examination> result;
        try {
            result = repairer.examine(id, receivedAt, RootRepairer.Mode.APPLY, previous.flatMap(Reported::startedAt), retry, pid);
        } catch (ContainerRuntimeException e) {
            runtimeErrors.unanswered(new RepairQueue.Job(jobKey, receivedAt, trigger, pid), watch.up(), e.getMessage());
            return;
        }
        runtimeErrors.answered(jobKey);
        if (result.isEmpty()) {
            return;
        }
        Examination e = result.get();
        if (e.exposure().map(x -> !x.isZero()).orElse(false) && answeredEarly.getAsBoolean()) {
            e = e.late(io.driveralias.agent.core.LateRepairCause.NRI_TIMEOUT);
        }
        examined.run();
        String examinedId = e.container().id().isEmpty() ? id : e.container().id();
        RepairQueue.Key key = new RepairQueue.Key(watch.name(), examinedId);
        Optional<Reported> kept = EndedStarts.kept(e, previous);
        if (kept.isPresent()) {
            // An ended start that is no news (see EndedStarts): its series goes, nothing is counted.
            metrics.gone(examinedId);
            history.put(key, kept.get());
            return;
        }
        history.put(key, reporter.report(e, previous));
    }

    /**
     * A start examined inside the runtime's own start (NRI), on the caller's thread: the container
     * held as a worker holds it (waiting for one that does, at most until {@code deadlineNanos}),
     * examined and reported as a worker would, so that neither path counts it twice. False when it
     * could not be held in time: a start job is queued instead, and the runtime goes on meanwhile.
     * {@code answerNow} lets the runtime go on once the container is examined, before its report.
     */
    boolean examineInRuntimeStart(String runtime, String id, int pid, Instant receivedAt, long deadlineNanos,
                                  BooleanSupplier answered, Runnable answerNow) {
        RepairQueue.Key key = new RepairQueue.Key(runtime, id);
        try {
            if (!queue.hold(key, deadlineNanos)) {
                queueStart(runtime, id, pid);
                return false;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
        try {
            examineAndReport(key, "start", receivedAt, pid, answered, answerNow);
            return true;
        } catch (RuntimeException e) {
            LOG.error("unexpected error examining container {} in its start", key, e);
            return true;
        } finally {
            queue.release(key);
        }
    }

    /** A start for the workers (one the runtime's start could not wait for). */
    void queueStart(String runtime, String id, int pid) {
        if (queue.offer(new RepairQueue.Job(new RepairQueue.Key(runtime, id), clock.instant(), "start", pid))
                == RepairQueue.Offer.FULL) {
            metrics.queueRefused(1);
        }
    }

    /**
     * Queues the containers of one runtime never reported (after NRI's Synchronize). Coalesced: while
     * one is waiting to begin, asking again adds nothing (a runtime that synchronizes in a loop costs
     * one reconcile at a time, not a queue of them); one asked while another runs follows it.
     */
    void reconcile(String runtime) {
        RuntimeWatch watch = runtimes.get(runtime);
        if (watch != null && reconcilesPending.add(runtime)) {
            reconciler.execute(() -> {
                reconcilesPending.remove(runtime);
                watch.reconcile(false);
            });
        }
    }

    RepairMetrics metrics() {
        return metrics;
    }

    /** The containers NRI answers at once, which the event path leaves alone. */
    NriPlain nriPlain() {
        return nriPlain;
    }

    @Override
    public boolean alive() {
        return runtimes.values().stream().allMatch(w -> w.watched.events().alive())
                && workers.stream().anyMatch(Thread::isAlive);
    }

    /** Every watched runtime reconciled once and reachable now, and, in a pod, one of them runs it. */
    @Override
    public boolean ready() {
        return runtimes.values().stream().allMatch(w -> w.reconciled && w.up())
                && ownPod.satisfied();
    }

    /** Stops taking events, lets repairs in flight finish (bounded by the grace), then stops. */
    @Override
    public void close() {
        runtimes.values().forEach(w -> w.watched.events().close());
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
