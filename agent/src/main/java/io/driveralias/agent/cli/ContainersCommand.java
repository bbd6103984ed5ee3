package io.driveralias.agent.cli;

import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.core.DriverLoad;
import io.driveralias.agent.core.DriverLoadText;
import io.driveralias.agent.core.HostDriverState;
import io.driveralias.agent.live.ContainerRepairer;
import io.driveralias.agent.live.ContainerRuntime;
import io.driveralias.agent.live.ContainerRuntimeException;
import io.driveralias.agent.live.Examination;
import io.driveralias.agent.repair.RootRepairer;
import java.io.PrintStream;
import java.time.Clock;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.IntSupplier;
import java.util.function.Supplier;

/**
 * {@code check [ID...]} and {@code repair [ID...]}: one pass over the running containers of
 * every watched runtime (or the named ones, looked up in each runtime in turn), printed per
 * container. Exit 0 when every container in scope is healthy (after repair), 1 otherwise, 3
 * when a runtime cannot be reached. GPU containers running on a host where the agent finds none
 * of the driver's files are not healthy either: nothing can be repaired there, and the command
 * says why and exits 1. Nor is a GPU container whose loader will take a driver library that does
 * not match the node's kernel module (an image's own copy, stale forward-compatibility libraries,
 * the node's own mismatch): its driver line says which file and why.
 */
public final class ContainersCommand {

    /** One runtime, and the repairer of its containers. */
    public record Target(ContainerRuntime runtime, ContainerRepairer repairer) {
    }

    /**
     * What the agent found of the host's driver.
     *
     * @param files       how many of its files (0: none, nothing can be repaired)
     * @param directories where it looked
     * @param node        the kernel module against the host's files, printed first by the text output
     */
    public record HostDriver(IntSupplier files, List<String> directories, Supplier<Optional<HostDriverState>> node) {

        public HostDriver(IntSupplier files, List<String> directories) {
            this(files, directories, Optional::empty);
        }
    }

    /** Until told otherwise: a host whose driver is not in question. */
    private static final HostDriver UNKNOWN = new HostDriver(() -> Integer.MAX_VALUE, List.of());

    private final List<Target> targets;
    private final Clock clock;
    private final PrintStream out;
    private final PrintStream err;
    private final HostDriver hostDriver;

    public ContainersCommand(List<Target> targets, Clock clock, PrintStream out, PrintStream err) {
        this(targets, clock, out, err, UNKNOWN);
    }

    private ContainersCommand(List<Target> targets, Clock clock, PrintStream out, PrintStream err, HostDriver hostDriver) {
        this.targets = List.copyOf(targets);
        this.clock = clock;
        this.out = out;
        this.err = err;
        this.hostDriver = hostDriver;
    }

    /** This command, judging GPU containers against what the agent finds of the host's driver. */
    public ContainersCommand withHostDriver(HostDriver driver) {
        return new ContainersCommand(targets, clock, out, err, driver);
    }

    /** {@code checkOnly}: report missing links as missing ({@code check}), not as "would create". */
    public int run(List<String> ids, RootRepairer.Mode mode, boolean checkOnly, boolean json) {
        List<Examination> results = new ArrayList<>();
        List<String> unknown = new ArrayList<>(ids);
        for (Target target : targets) {
            ContainerRuntime runtime = target.runtime();
            try {
                runtime.connect();
                List<String> wanted = ids.isEmpty() ? runtime.runningContainerIds() : List.copyOf(unknown);
                for (String id : wanted) {
                    try {
                        target.repairer().examine(id, clock.instant(), mode, Optional.empty(), false)
                                .ifPresent(results::add);
                        unknown.remove(id);
                    } catch (ContainerRuntimeException.NoSuchContainer e) {
                        // Perhaps another runtime's.
                    }
                }
            } catch (ContainerRuntimeException.Unreachable e) {
                err.println("driver-alias-agent: cannot reach " + displayName(runtime) + " at " + runtime.endpoint()
                        + ": " + e.getMessage());
                return ExitCodes.RUNTIME_UNREACHABLE;
            } catch (ContainerRuntimeException e) {
                err.println("driver-alias-agent: " + displayName(runtime) + ": " + e.getMessage());
                return ExitCodes.RUNTIME_UNREACHABLE;
            }
        }
        if (!unknown.isEmpty()) {
            unknown.forEach(id -> err.println("driver-alias-agent: no such container: " + id));
            return ExitCodes.UNREPAIRED;
        }
        long stranded = hostDriver.files().getAsInt() > 0 ? 0 : results.stream().filter(ContainersCommand::gpuWithoutDriver)
                .count();
        // Each GPU container's loader, looked at once its examination is over: read only.
        Map<Examination, DriverLoad> loads = new IdentityHashMap<>();
        results.forEach(e -> e.driverLook().take().ifPresent(load -> loads.put(e, load)));
        print(results, loads, mode == RootRepairer.Mode.DRY_RUN, checkOnly, json, stranded > 0);
        long mismatched = loads.values().stream().filter(l -> l.verdict().mismatch()).count();
        if (mismatched > 0) {
            err.println("driver-alias-agent: " + mismatched + " GPU container(s) will load a driver library that does not"
                    + " match the node's kernel module"
                    + loads.values().stream().findFirst().flatMap(DriverLoad::reference).map(v -> " " + v).orElse("")
                    + " (see each container's driver line)");
        }
        if (stranded > 0) {
            err.println("driver-alias-agent: no NVIDIA driver files on this host in " + hostDriver.directories()
                    + ", while " + stranded + " GPU container(s) run: no alias can be made for them. Name the"
                    + " directory that holds the driver's libcuda.so.<version> with --host-lib-dir"
                    + " (DRIVER_ALIAS_HOST_LIB_DIR)");
            return ExitCodes.UNREPAIRED;
        }
        boolean allHealthy = mismatched == 0 && results.stream().allMatch(r -> r.outcome() != ContainerOutcome.FAILED);
        return allHealthy ? ExitCodes.HEALTHY : ExitCodes.UNREPAIRED;
    }

    /**
     * A GPU container in which no driver file counted: its root was opened (only a container that
     * asked for a GPU is) and none of its driver-named files was the host's.
     */
    private static boolean gpuWithoutDriver(Examination e) {
        return e.outcome() == ContainerOutcome.NO_DRIVER && e.report().filter(r -> !r.hasDriver()).isPresent();
    }

    /** What a GPU container on a host without driver files is told. */
    static final String NO_HOST_DRIVER = "a GPU container, and the agent finds no driver files on the host: not repairable";

    private static String displayName(ContainerRuntime runtime) {
        return ContainerRuntime.displayName(runtime.name());
    }

    private void print(List<Examination> results, Map<Examination, DriverLoad> loads, boolean dryRun, boolean checkOnly,
                       boolean json, boolean hostless) {
        ReportPrinter printer = new ReportPrinter(out, checkOnly);
        if (!json) {
            hostDriver.node().get().ifPresent(node -> out.println("node: " + node.describe()));
        }
        if (json) {
            List<Map<String, Object>> all = new ArrayList<>();
            for (Examination e : results) {
                Map<String, Object> head = new LinkedHashMap<>();
                head.put("id", e.container().id());
                head.put("name", e.container().name());
                head.put("image", e.container().image());
                e.container().pod().ifPresent(p -> head.put("pod", Map.of("namespace", p.namespace(),
                        "name", p.name(), "container", p.container())));
                head.put("inScope", e.outcome() != ContainerOutcome.EXCLUDED);
                if (hostless && gpuWithoutDriver(e)) {
                    head.put("problem", NO_HOST_DRIVER);
                }
                DriverLoad load = loads.get(e);
                if (load != null) {
                    head.put("driver", Map.of("loads", load.verdict().label(), "mismatch", load.verdict().mismatch(),
                            "says", DriverLoadText.sentence(load), "libraries", DriverLoadText.lines(load)));
                }
                if (e.report().isPresent()) {
                    all.add(ReportPrinter.toMap(e.report().get(), head));
                } else {
                    head.put("outcome", e.outcome().label());
                    head.put("detail", e.detail());
                    all.add(head);
                }
            }
            printer.json(all);
            return;
        }
        for (Examination e : results) {
            String detail = hostless && gpuWithoutDriver(e) ? NO_HOST_DRIVER : e.detail();
            out.printf("== %s %s%s: %s%s%n", e.container().shortId(), e.container().displayName(),
                    e.container().image().isEmpty() ? "" : " (" + e.container().image() + ")",
                    dryRun && e.outcome() == ContainerOutcome.FAILED ? "unrepaired" : e.outcome().label(),
                    detail.isEmpty() ? "" : " (" + detail + ")");
            e.report().filter(r -> r.hasDriver() || !r.problems().isEmpty()).ifPresent(printer::text);
            DriverLoad load = loads.get(e);
            if (load != null) {
                out.println("   driver: " + load.verdict().label() + ": " + DriverLoadText.sentence(load));
                DriverLoadText.lines(load).forEach(line -> out.println("     " + line));
                String advice = DriverLoadText.advice(load);
                if (load.verdict().mismatch() && !advice.isEmpty()) {
                    out.println("     " + advice);
                }
            }
        }
    }
}
