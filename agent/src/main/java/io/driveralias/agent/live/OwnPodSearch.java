package io.driveralias.agent.live;

import io.driveralias.agent.metrics.RepairMetrics;
import java.util.Collection;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * In a pod: once every runtime has listed its containers, whether one of them runs the agent's
 * own pod. None does on a node whose kubelet uses a runtime the agent does not watch
 * (containerd beside Docker during a migration, CRI-O): the agent would be ready and repair
 * nothing. Apart from {@link Agent} because it is a readiness rule of its own, asked again
 * after every reconcile until the pod is found; its lines are the agent's.
 */
final class OwnPodSearch {

    private static final Logger LOG = LoggerFactory.getLogger(Agent.class);

    private final Optional<String> podUid;
    private final Collection<RuntimeWatch> runtimes;
    private final RepairMetrics metrics;
    /** Whether a watched runtime runs the agent's own pod: null until every runtime has reconciled once. */
    private volatile Boolean found;

    /** {@code runtimes}: a live view of the agent's watches, filled once this exists. */
    OwnPodSearch(Optional<String> podUid, Collection<RuntimeWatch> runtimes, RepairMetrics metrics) {
        this.podUid = podUid;
        this.runtimes = runtimes;
        this.metrics = metrics;
    }

    /** Outside a pod, or once a watched runtime was found running it. */
    boolean satisfied() {
        return podUid.isEmpty() || Boolean.TRUE.equals(found);
    }

    /** Asks each runtime, once all have reconciled, until one runs the pod. */
    synchronized void look() {
        if (satisfied() || !runtimes.stream().allMatch(w -> w.reconciled)) {
            return;
        }
        boolean runs = false;
        for (RuntimeWatch w : runtimes) {
            try {
                runs = w.watched.runtime().runsPod(podUid.get());
            } catch (ContainerRuntimeException e) {
                LOG.debug("{} could not say whether it runs pod {}: {}", w.display(), podUid.get(), e.getMessage());
                return;
            }
            if (runs) {
                break;
            }
        }
        metrics.ownPodVisible(runs);
        if (runs && found != null) {
            LOG.info("found its own pod {} through a watched runtime: ready", podUid.get());
        } else if (!runs && found == null) {
            LOG.error("this node's containers run in a runtime the agent does not watch: its own pod {} runs in none of {};"
                    + " not ready (docs/runbook.md#driveraliasruntimenotwatched)", podUid.get(),
                    runtimes.stream().map(w -> w.display() + " at " + w.watched.runtime().endpoint()).toList());
        }
        found = runs;
    }
}
