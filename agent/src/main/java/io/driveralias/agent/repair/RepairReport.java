package io.driveralias.agent.repair;

import io.driveralias.agent.core.ActionKind;
import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.core.DriverLibrary;
import io.driveralias.agent.core.FailureReason;
import io.driveralias.agent.core.LinkAction;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Everything one repair (or dry run, or check) of one root found and did. A loader cache that
 * could not be refreshed is among the problems.
 *
 * @param driverFiles the driver files found, with their SONAMEs (in a container: the host's own)
 */
public record RepairReport(Optional<String> driverVersion, List<LinkResult> links, List<Problem> problems,
                           LoaderCache.Status loaderCache, List<DriverLibrary> driverFiles) {

    public RepairReport {
        links = List.copyOf(links);
        problems = List.copyOf(problems);
        driverFiles = List.copyOf(driverFiles);
    }

    public RepairReport(Optional<String> driverVersion, List<LinkResult> links, List<Problem> problems) {
        this(driverVersion, links, problems, LoaderCache.Status.NOT_CHECKED, List.of());
    }

    /** The links written into a container before its start, as applied: all that is known of one gone before it was looked at again. */
    public static RepairReport seeded(List<LinkAction> links) {
        return new RepairReport(Optional.empty(), links.stream().map(a -> LinkResult.of(a, LinkStatus.APPLIED)).toList(),
                List.of());
    }

    public boolean hasDriver() {
        return driverVersion.isPresent();
    }

    /** Nothing failed, nothing conflicts, nothing is left to do. */
    public boolean healthy() {
        return problems.isEmpty() && loaderCache != LoaderCache.Status.WOULD_UPDATE && links.stream()
                .noneMatch(l -> l.status() == LinkStatus.FAILED || l.status() == LinkStatus.PLANNED);
    }

    public ContainerOutcome outcome() {
        if (!healthy()) {
            return hasDriver() || !problems.isEmpty() ? ContainerOutcome.FAILED : ContainerOutcome.NO_DRIVER;
        }
        if (!hasDriver()) {
            return ContainerOutcome.NO_DRIVER;
        }
        boolean changed = count(ActionKind.CREATE) + count(ActionKind.REPLACE) > 0
                || loaderCache == LoaderCache.Status.UPDATED;
        return changed ? ContainerOutcome.REPAIRED : ContainerOutcome.HEALTHY;
    }

    /** Applied links of one kind (CREATE or REPLACE). */
    public long count(ActionKind kind) {
        return links.stream().filter(l -> l.status() == LinkStatus.APPLIED && l.action().kind() == kind).count();
    }

    public List<LinkResult> applied() {
        return links.stream().filter(l -> l.status() == LinkStatus.APPLIED).toList();
    }

    /**
     * This report, with the links found already right that the agent itself wrote before the
     * container started counted as applied: for the container, they were repaired.
     */
    public RepairReport withSeeded(List<LinkAction> seeded) {
        List<LinkResult> merged = new ArrayList<>(links.size());
        for (LinkResult l : links) {
            LinkAction match = seeded.stream()
                    .filter(s -> s.path().equals(l.action().path()) && s.target().equals(l.action().target()))
                    .findFirst().orElse(null);
            merged.add(match != null && l.status() == LinkStatus.UNCHANGED && l.action().kind() == ActionKind.KEEP
                    ? LinkResult.of(match, LinkStatus.APPLIED) : l);
        }
        return new RepairReport(driverVersion, merged, problems, loaderCache, driverFiles);
    }

    /** Each distinct reason this root is not healthy, links first, then problems. */
    public Set<FailureReason> failureReasons() {
        Set<FailureReason> reasons = new LinkedHashSet<>();
        links.stream().filter(l -> l.status() == LinkStatus.FAILED).forEach(l -> reasons.add(l.reason()));
        problems.forEach(p -> reasons.add(p.reason()));
        return reasons;
    }
}
