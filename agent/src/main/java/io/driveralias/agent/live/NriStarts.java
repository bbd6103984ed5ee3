package io.driveralias.agent.live;

import io.driveralias.agent.core.FileNames;
import io.driveralias.agent.core.GpuRequest;
import io.driveralias.agent.core.LogThrottle;
import io.driveralias.agent.core.Printable;
import io.driveralias.agent.metrics.RepairMetrics;
import io.driveralias.agent.nri.NriContainer;
import io.driveralias.agent.nri.NriHandler;
import io.driveralias.agent.nri.NriMount;
import io.driveralias.agent.nri.NriPod;
import io.driveralias.agent.nri.NriRuntimeInfo;
import io.driveralias.agent.nri.NriSync;
import io.driveralias.agent.nri.StartCall;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.IntFunction;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The agent inside the runtime's own start: containerd calls its NRI plugin at each CRI
 * container's StartContainer (the process exists, its root is mounted, its first instruction
 * waits for the answer) and the repair runs there, so the aliases are in place at the first
 * instruction whatever the node's load. NRI serializes its calls node-wide: a container that does
 * not ask for a GPU is answered at once, from the call alone (no description, no write); one that
 * may is repaired as the event path's start would be (the same description, checks and report,
 * under the same hold on the container, so neither path counts it twice), within the plugin's
 * deadline. Containers NRI does not see (containerd 1.6, {@code ctr}) stay the event path's.
 *
 * <p>Every call but {@link #startContainer} runs on the plugin's one reading thread, under NRI's
 * node-wide lock: they decide from the call alone, and never touch a filesystem (a bind's source
 * may sit on a stalled network filesystem a pod's owner controls). A bind named like a driver file
 * whose source is not, as a string, where the agent found the host's driver is looked at
 * ({@code stat}) only on a call thread, under the call's deadline. A container whose id is none by
 * containerd's rules (only a broken or hostile runtime sends one) is answered at once and kept
 * nowhere.
 */
public final class NriStarts implements NriHandler {

    /** The {@code runtime} label of the NRI connection in {@code driver_alias_runtime_up}. */
    public static final String RUNTIME_LABEL = "nri";
    private static final Logger LOG = LoggerFactory.getLogger(NriStarts.class);
    private static final Duration LOG_INTERVAL = Duration.ofMinutes(1);

    /**
     * The host's driver files, as a bind's source may name them.
     *
     * @param known             whether a host path is, as a string, where the agent found one (no I/O)
     * @param leadsToDriverFile whether a host path leads to one ({@code stat}: may block on its filesystem)
     */
    public record DriverPaths(Predicate<String> known, Predicate<String> leadsToDriverFile) {
    }

    /** What a call shows of a container's GPU ask. */
    enum Ask {
        /** No sign of one: answered at once. */
        NONE,
        /** A sign the call itself shows. */
        GPU,
        /** A bind named like a driver file from a source not known as one: only a look at the file tells. */
        UNSURE
    }

    private final Agent agent;
    private final String runtime;
    private final Set<String> gpuRuntimes;
    private final DriverPaths driverPaths;
    private final RepairMetrics metrics;
    private final Clock clock;
    private final IntFunction<Optional<Instant>> processStart;
    /** The runtime as NRI alone tells it, where the agent reads no API of the runtime's own (CRI-O): told every container. */
    private final Optional<NriRuntime> told;
    private final LogThrottle badIds = new LogThrottle(LOG_INTERVAL);
    private final LogThrottle connections = new LogThrottle(LOG_INTERVAL);
    private volatile boolean up;

    /**
     * @param runtime      the watched runtime whose containers NRI starts (containerd's name)
     * @param gpuRuntimes  runtime handlers that add the driver's files ({@code --gpu-runtime})
     * @param driverPaths  the host's driver files, by a bind's source
     * @param processStart when a process started (the kernel's, as the event path reads it)
     * @param told         where the runtime is known through NRI alone: the runtime {@code runtime} names, told
     *                     every container NRI describes; empty where its own API describes them (containerd)
     */
    public NriStarts(Agent agent, String runtime, Set<String> gpuRuntimes, DriverPaths driverPaths, Clock clock,
                     IntFunction<Optional<Instant>> processStart, Optional<NriRuntime> told) {
        this.agent = agent;
        this.told = told;
        this.runtime = runtime;
        this.gpuRuntimes = Set.copyOf(gpuRuntimes);
        this.driverPaths = driverPaths;
        this.metrics = agent.metrics();
        this.clock = clock;
        this.processStart = processStart;
        metrics.runtimeConnected(RUNTIME_LABEL, false);
    }

    /** Whether the runtime has the plugin now. */
    public boolean up() {
        return up;
    }

    /**
     * Logged once a minute at most: a runtime that takes the plugin and drops it again in a loop
     * would otherwise fill the log (the plugin's own outage lines are throttled too).
     */
    @Override
    public void connected(NriRuntimeInfo info) {
        up = true;
        metrics.runtimeConnected(RUNTIME_LABEL, true);
        told.ifPresent(t -> t.connection(Optional.of(Printable.of(info.name()) + " " + Printable.of(info.version())
                + (info.nriVersion().isEmpty() ? "" : " (NRI " + Printable.of(info.nriVersion()) + ")"))));
        long skipped = connections.admit();
        if (skipped >= 0) {
            LOG.info("serving the starts of {} {}{} as its NRI plugin (request timeout {} ms): GPU containers made through the CRI"
                    + " are repaired inside their start; others ({}'s own clients) through its events{}",
                    Printable.of(info.name()), Printable.of(info.version()),
                    info.nriVersion().isEmpty() ? "" : " (NRI " + Printable.of(info.nriVersion()) + ")",
                    info.requestTimeout().toMillis(), runtime, LogThrottle.since(skipped));
        }
    }

    @Override
    public void disconnected(String why) {
        up = false;
        agent.nriPlain().forgetAll();
        metrics.runtimeConnected(RUNTIME_LABEL, false);
        told.ifPresent(t -> t.connection(Optional.empty()));
        long skipped = connections.admit();
        if (skipped >= 0) {
            LOG.warn("the runtime's NRI connection is gone ({}): its containers are served through its events until the plugin"
                    + " is back (a container started meanwhile may be repaired after its first instruction){}", Printable.of(why),
                    LogThrottle.since(skipped));
        }
    }

    @Override
    public void synchronize(NriSync part) {
        told.ifPresent(t -> {
            Map<String, NriPod> pods = new HashMap<>();
            part.pods().forEach(p -> pods.put(p.id(), p));
            for (NriContainer c : part.containers()) {
                t.told(pods.getOrDefault(c.podSandboxId(), NriPod.UNKNOWN), c);
            }
        });
        if (part.last()) {
            // Whatever started while the plugin was away: the event path's reconcile covers it.
            agent.reconcile(runtime);
        }
    }

    /**
     * A container that shows no GPU ask at its creation is left to NRI (the event path does not
     * describe it); one that does, or may, is seeded by the event path at its create, as on any node.
     */
    @Override
    public void createContainer(NriPod pod, NriContainer container) {
        told.ifPresent(t -> t.told(pod, container));
        if (validId(container) && ask(pod, container, gpuRuntimes, driverPaths) == Ask.NONE) {
            agent.nriPlain().announce(new RepairQueue.Key(runtime, container.id()));
        }
    }

    /** A start that shows no GPU ask, has no process, or has no valid id is answered at once. */
    @Override
    public boolean wantsStart(NriPod pod, NriContainer container) {
        return container.pid() > 0 && !container.id().isEmpty() && ask(pod, container, gpuRuntimes, driverPaths) != Ask.NONE;
    }

    /**
     * One that showed no GPU ask is counted (if NRI announced it) after its answer: reading its
     * process's start from /proc and the count need not hold the node's pod starts. One that did
     * but came without a process is the event path's (it describes the container through its
     * runtime), whatever its create said.
     */
    @Override
    public void answeredAtOnce(NriPod pod, NriContainer container) {
        if (!validId(container)) {
            return;
        }
        told.ifPresent(t -> t.told(pod, container));
        RepairQueue.Key key = new RepairQueue.Key(runtime, container.id());
        if (ask(pod, container, gpuRuntimes, driverPaths) == Ask.NONE) {
            agent.nriPlain().startedWithoutGpu(key, () -> processStart.apply(container.pid()));
        } else {
            agent.nriPlain().forget(key);
            agent.queueStart(runtime, container.id(), 0);
        }
    }

    @Override
    public void startContainer(NriPod pod, NriContainer container, StartCall call) {
        told.ifPresent(t -> t.told(pod, container));
        Ask ask = ask(pod, container, gpuRuntimes, driverPaths);
        if (ask == Ask.UNSURE && !bindsHostDriverFile(container, driverPaths)) {
            // Named like the driver's files, and none of them: not announced at its create, so the event path counts it.
            return;
        }
        agent.examineInRuntimeStart(runtime, container.id(), container.pid(), clock.instant(), call.deadlineNanos(),
                call::answered, call::answerNow);
    }

    @Override
    public void notServed(NriPod pod, NriContainer container, String why) {
        // Only a start that wantsStart kept comes here: one with a process that may ask for a GPU.
        LOG.warn("container {} ({}/{}) started without the agent's NRI call ({}): repaired through the event path",
                Printable.of(container.id()), Printable.of(pod.namespace()), Printable.of(pod.name()), Printable.of(why));
        agent.queueStart(runtime, container.id(), container.pid());
    }

    /** A container NRI gave an id that is none by containerd's rules: logged once a minute at most, kept nowhere. */
    private boolean validId(NriContainer container) {
        if (!container.id().isEmpty()) {
            return true;
        }
        long skipped = badIds.admit();
        if (skipped >= 0) {
            LOG.warn("the runtime's NRI call named a container ({} of pod sandbox {}) by an id that is none by containerd's rules:"
                    + " answered at once and not examined{}", Printable.of(container.name()), Printable.of(container.podSandboxId()),
                    LogThrottle.since(skipped));
        }
        return false;
    }

    /**
     * What the call shows of the container's GPU ask, from the call alone (no I/O): a sign of one
     * ({@code NVIDIA_VISIBLE_DEVICES} set and not {@code void}, NVIDIA's device nodes, one of
     * NVIDIA's CDI devices given by the runtime or asked for in an annotation, a GPU runtime
     * handler, a bind of a path where the agent found the host's driver; or a call cut short by its
     * bounds), else a bind named like a driver file from another source (unsure), else none. The
     * runtime's binary, which decides whether {@code NVIDIA_VISIBLE_DEVICES} counts, is in
     * containerd's record, which the repair reads.
     */
    static Ask ask(NriPod pod, NriContainer container, Set<String> gpuRuntimes, DriverPaths driverPaths) {
        if (!container.complete() || !pod.complete() || container.nvidiaDevice() || container.nvidiaCdiDevice()
                || gpuRuntimes.contains(pod.runtimeHandler())) {
            return Ask.GPU;
        }
        if (GpuRequest.visibleDevices(container.nvidiaEnv()).filter(v -> !v.isEmpty() && !v.equals("void")).isPresent()) {
            return Ask.GPU;
        }
        if (NriDescriptions.cdiAnnotation(container.annotations())) {
            return Ask.GPU;
        }
        Ask ask = Ask.NONE;
        for (NriMount m : container.bindMounts()) {
            if (FileNames.hasDriverVersion(FileNames.baseName(m.destination()))) {
                if (driverPaths.known().test(m.source())) {
                    return Ask.GPU;
                }
                ask = Ask.UNSURE;
            }
        }
        return ask;
    }

    /** Whether a bind named like a driver file leads to one of the host's: a {@code stat} each, for a call thread only. */
    static boolean bindsHostDriverFile(NriContainer container, DriverPaths driverPaths) {
        for (NriMount m : container.bindMounts()) {
            if (FileNames.hasDriverVersion(FileNames.baseName(m.destination())) && driverPaths.leadsToDriverFile().test(m.source())) {
                return true;
            }
        }
        return false;
    }
}
