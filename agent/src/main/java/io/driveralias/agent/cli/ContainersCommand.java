package io.driveralias.agent.cli;

import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.live.Docker;
import io.driveralias.agent.live.DockerException;
import io.driveralias.agent.live.ContainerRepairer;
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
 * {@code check [ID...]} and {@code repair [ID...]}: one pass over the running containers (or
 * the named ones), printed per container. Exit 0 when every container in scope is healthy
 * (after repair), 1 otherwise, 3 when Docker cannot be reached.
 */
public final class ContainersCommand {

    private final Docker docker;
    private final ContainerRepairer repairer;
    private final Clock clock;
    private final PrintStream out;
    private final PrintStream err;

    public ContainersCommand(Docker docker, ContainerRepairer repairer, Clock clock, PrintStream out, PrintStream err) {
        this.docker = docker;
        this.repairer = repairer;
        this.clock = clock;
        this.out = out;
        this.err = err;
    }

    /** {@code checkOnly}: report missing links as missing ({@code check}), not as "would create". */
    public int run(List<String> ids, RootRepairer.Mode mode, boolean checkOnly, boolean json) {
        List<Examination> results = new ArrayList<>();
        try {
            docker.negotiate();
            List<String> targets = ids.isEmpty() ? docker.runningContainerIds() : ids;
            for (String id : targets) {
                try {
                    repairer.examine(id, clock.instant(), mode, Optional.empty(), false).ifPresent(results::add);
                } catch (DockerException.NoSuchContainer e) {
                    err.println("driver-alias-agent: no such container: " + id);
                    return ExitCodes.UNREPAIRED;
                }
            }
        } catch (DockerException.Unreachable e) {
            err.println("driver-alias-agent: cannot reach Docker at " + docker.host() + ": " + e.getMessage());
            return ExitCodes.DOCKER_UNREACHABLE;
        } catch (DockerException e) {
            err.println("driver-alias-agent: Docker: " + e.getMessage());
            return ExitCodes.DOCKER_UNREACHABLE;
        }
        print(results, mode == RootRepairer.Mode.DRY_RUN, checkOnly, json);
        boolean allHealthy = results.stream().allMatch(r -> r.outcome() != ContainerOutcome.FAILED);
        return allHealthy ? ExitCodes.HEALTHY : ExitCodes.UNREPAIRED;
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
