package io.driveralias.agent.live;

import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.core.LruMap;
import io.driveralias.agent.live.ExaminationReporter.Reported;
import io.driveralias.agent.metrics.RepairMetrics;
import java.time.Instant;
import java.util.Collections;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Containers the runtime's NRI announced at their CreateContainer as asking for no GPU, which its
 * StartContainer answers at once: the event path leaves them alone (no description at their
 * create, at their task's, nor at a reconcile, which could list one while NRI holds its start).
 * Without this, on an NRI node every ordinary pod's container was described twice through
 * containerd's API for nothing (about 10 ms of the agent's CPU each, beside the pod's own start).
 * NRI calls CreateContainer before containerd stores the container, so the announcement comes
 * before its create event; a container announced late is only described as before.
 *
 * <p>While NRI is down nothing is announced and what was is forgotten: the event path serves every
 * container, and a container announced but never started through NRI (the connection lost between)
 * is found by the reconcile that follows NRI's Synchronize. Bounded: {@value #CAPACITY} containers
 * from create to removal, the least recently announced or started forgotten (and then served as before).
 */
final class NriPlain {

    static final int CAPACITY = 4096;

    /** Each announced container, and whether its start was counted; kept until it is removed (its events may come late). */
    private final Map<RepairQueue.Key, Boolean> announced = Collections.synchronizedMap(new LruMap<>(CAPACITY));
    private final Map<RepairQueue.Key, Reported> history;
    private final RepairMetrics metrics;

    NriPlain(Map<RepairQueue.Key, Reported> history, RepairMetrics metrics) {
        this.history = history;
        this.metrics = metrics;
    }

    /** NRI's CreateContainer showed no way for the container to ask for a GPU. */
    void announce(RepairQueue.Key key) {
        announced.put(key, Boolean.FALSE);
    }

    /** Whether the event path leaves this container to NRI. */
    boolean leftToNri(RepairQueue.Key key) {
        return announced.containsKey(key);
    }

    /**
     * Its StartContainer, answered at once, found no GPU asked either: counted as the event path
     * would have ({@code no_driver}), and kept as reported so that no reconcile describes it. A
     * container never announced stays the event path's, which counts it.
     */
    void startedWithoutGpu(RepairQueue.Key key, Supplier<Optional<Instant>> processStart) {
        if (announced.replace(key, Boolean.FALSE, Boolean.TRUE)) {
            // With its process's start, as the event path would record it: a full reconcile (after containerd
            // restarts) finds this start examined already and counts it no second time.
            history.put(key, new Reported(processStart.get(), ContainerOutcome.NO_DRIVER, "no GPU asked (NRI)"));
            metrics.containerExamined(ContainerOutcome.NO_DRIVER);
        }
    }

    /** The container is removed, or NRI went away: the event path's again. */
    void forget(RepairQueue.Key key) {
        announced.remove(key);
    }

    void forgetAll() {
        announced.clear();
    }
}
