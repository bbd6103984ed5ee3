package io.driveralias.agent.cli;

import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.live.ContainerRepairer;
import io.driveralias.agent.live.ContainerRuntime;
import io.driveralias.agent.live.ContainerRuntimeException;
import io.driveralias.agent.live.Examination;
import io.driveralias.agent.repair.RootRepairer;
import java.io.PrintStream;
import java.time.Clock;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * {@code check [ID...]} and {@code repair [ID...]}: one pass over the running containers of
 * every watched runtime (or the named ones, looked up in each runtime in turn), printed per
 * container. Exit 0 when every container in scope is healthy (after repair), 1 otherwise, 3
 * when a runtime cannot be reached.
 */
public final class ContainersCommand {

    /** One runtime, and the repairer of its containers. */
    public record Target(ContainerRuntime runtime, ContainerRepairer repairer) {
    }

    private final List<Target> targets;
    private final Clock clock;
    private final PrintStream out;
    private final PrintStream err;

    public ContainersCommand(List<Target> targets, Clock clock, PrintStream out, PrintStream err) {
        this.targets = List.copyOf(targets);
        this.clock = clock;
        this.out = out;
        this.err = err;
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
        print(results, mode == RootRepairer.Mode.DRY_RUN, checkOnly, json);
        boolean allHealthy = results.stream().allMatch(r -> r.outcome() != ContainerOutcome.FAILED);
        return allHealthy ? ExitCodes.HEALTHY : ExitCodes.UNREPAIRED;
    }

    private static String displayName(ContainerRuntime runtime) {
        return ContainerRuntime.displayName(runtime.name());
    }

    private void print(List<Examination> results, boolean dryRun, boolean checkOnly, boolean json) {
        ReportPrinter printer = new ReportPrinter(out, checkOnly);
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
            out.printf("== %s %s%s: %s%s%n", e.container().shortId(), e.container().displayName(),
                    e.container().image().isEmpty() ? "" : " (" + e.container().image() + ")",
                    dryRun && e.outcome() == ContainerOutcome.FAILED ? "unrepaired" : e.outcome().label(),
                    e.detail().isEmpty() ? "" : " (" + e.detail() + ")");
            e.report().filter(r -> r.hasDriver() || !r.problems().isEmpty()).ifPresent(printer::text);
        }
    }
}
