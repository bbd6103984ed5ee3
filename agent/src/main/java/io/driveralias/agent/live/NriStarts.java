package io.driveralias.agent.live;

import io.driveralias.agent.core.FileNames;
import io.driveralias.agent.core.GpuRequest;
import io.driveralias.agent.core.Printable;
import io.driveralias.agent.metrics.RepairMetrics;
import io.driveralias.agent.nri.NriContainer;
import io.driveralias.agent.nri.NriHandler;
import io.driveralias.agent.nri.NriMount;
import io.driveralias.agent.nri.NriPod;
import io.driveralias.agent.nri.NriSync;
import io.driveralias.agent.nri.StartCall;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
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
 */
public final class NriStarts implements NriHandler {

    /** The {@code runtime} label of the NRI connection in {@code driver_alias_runtime_up}. */
    public static final String RUNTIME_LABEL = "nri";
    private static final Logger LOG = LoggerFactory.getLogger(NriStarts.class);

    private final Agent agent;
    private final String runtime;
    private final Set<String> gpuRuntimes;
    private final Predicate<String> hostDriverFile;
    private final RepairMetrics metrics;
    private final Clock clock;
    private final IntFunction<Optional<Instant>> processStart;
    private volatile boolean up;

    /**
     * @param runtime        the watched runtime whose containers NRI starts (containerd's name)
     * @param gpuRuntimes    runtime handlers that add the driver's files ({@code --gpu-runtime})
     * @param hostDriverFile whether a host path is one of the host's own driver files
     * @param processStart   when a process started (the kernel's, as the event path reads it)
     */
    public NriStarts(Agent agent, String runtime, Set<String> gpuRuntimes, Predicate<String> hostDriverFile, Clock clock,
                     IntFunction<Optional<Instant>> processStart) {
        this.agent = agent;
        this.runtime = runtime;
        this.gpuRuntimes = Set.copyOf(gpuRuntimes);
        this.hostDriverFile = hostDriverFile;
        this.metrics = agent.metrics();
        this.clock = clock;
        this.processStart = processStart;
        metrics.runtimeConnected(RUNTIME_LABEL, false);
    }

    /** Whether the runtime has the plugin now. */
    public boolean up() {
        return up;
    }

    @Override
    public void connected(String runtimeName, String runtimeVersion, Duration requestTimeout) {
        up = true;
        metrics.runtimeConnected(RUNTIME_LABEL, true);
        LOG.info("serving the starts of {} {} as its NRI plugin (request timeout {} ms): GPU containers made through the CRI"
                + " are repaired inside their start; others ({}'s own clients) through its events",
                Printable.of(runtimeName), Printable.of(runtimeVersion), requestTimeout.toMillis(), runtime);
    }

    @Override
    public void disconnected(String why) {
        up = false;
        agent.nriPlain().forgetAll();
        metrics.runtimeConnected(RUNTIME_LABEL, false);
        LOG.warn("the runtime's NRI connection is gone ({}): its containers are served through its events until the plugin"
                + " is back (a container started meanwhile may be repaired after its first instruction)", Printable.of(why));
    }

    @Override
    public void synchronize(NriSync part) {
        if (part.last()) {
            // Whatever started while the plugin was away: the event path's reconcile covers it.
            agent.reconcile(runtime);
        }
    }

    /**
     * A container that shows no GPU ask at its creation is left to NRI (the event path does not
     * describe it); one that does is seeded by the event path at its create, as on any node.
     */
    @Override
    public void createContainer(NriPod pod, NriContainer container) {
        if (!showsGpuAsk(pod, container, gpuRuntimes, hostDriverFile)) {
            agent.nriPlain().announce(new RepairQueue.Key(runtime, container.id()));
        }
    }

    /** A start that shows no GPU ask or has no process is answered at once. */
    @Override
    public boolean wantsStart(NriPod pod, NriContainer container) {
        return mayAskForGpu(pod, container, gpuRuntimes, hostDriverFile);
    }

    /**
     * One that showed no GPU ask is counted (if NRI announced it) after its answer: reading its
     * process's start from /proc and the count need not hold the node's pod starts.
     */
    @Override
    public void answeredAtOnce(NriPod pod, NriContainer container) {
        if (!showsGpuAsk(pod, container, gpuRuntimes, hostDriverFile)) {
            agent.nriPlain().startedWithoutGpu(new RepairQueue.Key(runtime, container.id()), () -> processStart.apply(container.pid()));
        }
    }

    @Override
    public void startContainer(NriPod pod, NriContainer container, StartCall call) {
        if (!mayAskForGpu(pod, container, gpuRuntimes, hostDriverFile)) {
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

    /**
     * Whether the call shows any way the container could ask for a GPU: {@code NVIDIA_VISIBLE_DEVICES}
     * set and not {@code void} (the runtime's binary, which decides whether it counts, is in
     * containerd's record, which the repair reads), NVIDIA's device nodes, a CDI device of NVIDIA's,
     * a GPU runtime handler, a bind of one of the host's driver files; or a call cut short by its
     * bounds. Anything else is answered at once.
     */
    static boolean mayAskForGpu(NriPod pod, NriContainer container, Set<String> gpuRuntimes, Predicate<String> hostDriverFile) {
        return container.pid() > 0 && showsGpuAsk(pod, container, gpuRuntimes, hostDriverFile);
    }

    /** {@link #mayAskForGpu}, whether or not the container has a process yet (CreateContainer). */
    static boolean showsGpuAsk(NriPod pod, NriContainer container, Set<String> gpuRuntimes, Predicate<String> hostDriverFile) {
        if (!container.complete() || !pod.complete() || container.nvidiaDevice() || gpuRuntimes.contains(pod.runtimeHandler())) {
            return true;
        }
        if (GpuRequest.visibleDevices(container.nvidiaEnv()).filter(v -> !v.isEmpty() && !v.equals("void")).isPresent()) {
            return true;
        }
        for (var annotation : container.annotations().entrySet()) {
            if (annotation.getKey().startsWith("cdi.k8s.io/")) {
                for (String device : annotation.getValue().split(",")) {
                    if (GpuRequest.isNvidiaCdiDevice(device.trim())) {
                        return true;
                    }
                }
            }
        }
        for (NriMount m : container.bindMounts()) {
            if (FileNames.hasDriverVersion(FileNames.baseName(m.destination())) && hostDriverFile.test(m.source())) {
                return true;
            }
        }
        return false;
    }
}
