package io.driveralias.agent.live;

import io.driveralias.agent.core.ActionKind;
import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.core.DriverLoad;
import io.driveralias.agent.core.DriverLoadText;
import io.driveralias.agent.core.LateRepairCause;
import io.driveralias.agent.core.Printable;
import io.driveralias.agent.kube.PodEvents;
import io.driveralias.agent.logging.Mdc;
import io.driveralias.agent.metrics.RepairMetrics;
import io.driveralias.agent.repair.LinkResult;
import io.driveralias.agent.repair.RepairReport;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The one place an examination is reported: metrics, one log line, an Event on the pod.
 * Each start of a container is counted once per outcome: a reconcile that finds a failed
 * container failed again adds nothing to the counters, and its warning (and Event) is
 * repeated only when what is wrong has changed.
 */
public final class ExaminationReporter {

    /**
     * What was last reported for a container: enough to tell a repeat from news.
     *
     * @param driver what its loader takes of the driver, as last said ("" before, or for no GPU container)
     */
    public record Reported(Optional<Instant> startedAt, ContainerOutcome outcome, String summary, String driver) {

        public Reported(Optional<Instant> startedAt, ContainerOutcome outcome, String summary) {
            this(startedAt, outcome, summary, "");
        }
    }

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ExaminationReporter.class);

    private final RepairMetrics metrics;
    private final PodEvents podEvents;
    /** The causes of late repairs already explained in the log: one INFO line per cause. */
    private final java.util.Set<LateRepairCause> explained = java.util.concurrent.ConcurrentHashMap.newKeySet();

    public ExaminationReporter(RepairMetrics metrics, PodEvents podEvents) {
        this.metrics = metrics;
        this.podEvents = podEvents;
    }

    /**
     * @param previous what was reported for this container before, if anything
     * @return what is now reported, for the next examination of the same container
     */
    public Reported report(Examination e, Optional<Reported> previous) {
        ContainerRef ref = e.container();
        String summary = e.report().map(ExaminationReporter::failures).filter(s -> !s.isEmpty()).orElse(e.detail());
        boolean sameStart = previous.isPresent() && previous.get().startedAt().equals(e.startedAt());
        boolean counted = sameStart && previous.get().outcome() == e.outcome();
        boolean news = !counted || (e.outcome() == ContainerOutcome.FAILED && !previous.get().summary().equals(summary));
        try (Mdc ignored = Mdc.container(ref)) {
            // The state first: a scrape that sees a failure counted also sees its unrepaired series.
            if (e.outcome() == ContainerOutcome.FAILED) {
                metrics.unrepaired(ref, e.report().map(RepairReport::failureReasons).orElse(java.util.Set.of()));
            } else {
                metrics.resolved(ref.id());
            }
            if (!counted) {
                count(e);
            }
            if (news) {
                announce(e, summary);
            } else {
                LOG.debug("container {} ({}): still {}: {}", ref.shortId(), ref.displayName(), e.outcome().label(),
                        summary);
            }
            // What the loader takes is looked at once per start and outcome: a reconcile that finds
            // the same start in the same state reads nothing more of it.
            String before = sameStart ? previous.get().driver() : null;
            String driver = counted && !before.isEmpty() ? before
                    : e.driverLook().take().map(load -> driver(e, load, before)).orElse(before == null ? "" : before);
            return new Reported(e.startedAt(), e.outcome(), summary, driver);
        }
    }

    /**
     * What a GPU container's loader takes of the driver: counted once per start, its series set
     * while it does not match the node's module, and said (log line, Event) when it is news.
     *
     * @param before what was said of this start before, or null for a start not reported yet
     * @return what is said now
     */
    private String driver(Examination e, DriverLoad load, String before) {
        ContainerRef ref = e.container();
        if (load.verdict().mismatch()) {
            metrics.driverMismatch(ref, load);
        } else {
            metrics.driverMatched(ref.id());
        }
        String sentence = DriverLoadText.sentence(load);
        String said = load.verdict().label() + ": " + sentence;
        if (before == null || before.isEmpty()) {
            metrics.containerDriver(load.verdict());
        }
        if (said.equals(before)) {
            return said;
        }
        if (load.verdict().mismatch()) {
            LOG.warn("GPU container {} ({}): {}; {}{}", ref.shortId(), ref.displayName(), sentence, DriverLoadText.advice(load),
                    image(ref));
        } else if (load.verdict() == DriverLoad.Verdict.COMPAT) {
            LOG.info("GPU container {} ({}): {}{}", ref.shortId(), ref.displayName(), sentence, image(ref));
        } else {
            LOG.debug("GPU container {} ({}) loads {}", ref.shortId(), ref.displayName(), sentence);
        }
        podEvents.driverLoad(ref, load);
        return said;
    }

    private void count(Examination e) {
        metrics.containerExamined(e.outcome());
        e.report().ifPresent(r -> {
            // Links made count even when another alias of the same container conflicts.
            for (LinkResult link : r.applied()) {
                if (link.action().kind() == ActionKind.CREATE) {
                    metrics.linkCreated(link.action().name());
                } else {
                    metrics.linkReplaced(link.action().name());
                }
            }
            if (e.outcome() == ContainerOutcome.FAILED || e.outcome() == ContainerOutcome.MISSED) {
                r.failureReasons().forEach(metrics::repairFailed);
            }
        });
        if (e.outcome() == ContainerOutcome.REPAIRED) {
            metrics.repairDuration(e.repairTook());
            e.exposure().ifPresent(metrics::exposure);
            e.report().flatMap(RepairReport::driverVersion).ifPresent(metrics::driverVersion);
            boolean late = e.exposure().map(x -> !x.isZero()).orElse(true);
            e.lateCause().filter(c -> late).ifPresent(cause -> {
                metrics.repairedAfterStart(cause);
                if (explained.add(cause)) {
                    LOG.info("containers on this node are repaired after their first instruction, not before it ({}): {}"
                            + " (the first: {})", cause.label(), cause.explanation(), e.container().shortId());
                }
            });
        }
    }

    private void announce(Examination e, String summary) {
        ContainerRef ref = e.container();
        List<String> made = e.report().map(r -> r.applied().stream().map(l -> l.action().name()).toList())
                .orElse(List.of());
        String links = made.isEmpty() ? "" : made.size() + " link(s) " + Printable.list(made) + ", ";
        switch (e.outcome()) {
            case REPAIRED -> {
                e.report().ifPresent(r -> podEvents.repaired(ref, r));
                LOG.info("repaired container {} ({}){}: {}{}{}", ref.shortId(), ref.displayName(),
                        e.detail().isEmpty() ? "" : " " + Printable.of(e.detail()), links, timing(e), image(ref));
            }
            case FAILED -> {
                e.report().ifPresent(r -> podEvents.failed(ref, r));
                LOG.warn("container {} ({}) is not repaired: {}; {}{}{}", ref.shortId(), ref.displayName(), summary,
                        links, timing(e), image(ref));
            }
            case MISSED -> LOG.warn("GPU container {} ({}) ran without its aliases and is gone: {}{}",
                    ref.shortId(), ref.displayName(), Printable.of(e.detail()), image(ref));
            default -> LOG.debug("container {} ({}): {} {}", ref.shortId(), ref.displayName(), e.outcome().label(),
                    Printable.of(e.detail()));
        }
    }

    /** Measured from the container's start where known: what its user waited, not just the agent's part. */
    private static String timing(Examination e) {
        Duration took = e.repairTook();
        return e.exposure().map(x -> x.isZero() ? "before the container started (" + took.toMillis() + " ms)"
                        : x.toMillis() + " ms after the container started (repair " + took.toMillis() + " ms)")
                .orElse("in " + took.toMillis() + " ms");
    }

    private static String image(ContainerRef ref) {
        return ref.image().isEmpty() ? "" : " [image " + ref.displayImage() + "]";
    }

    /**
     * "reason: message (alias, alias and N more); reason: ...": links that failed alike grouped,
     * every part escaped and the whole bounded, whatever the container holds.
     */
    static String failures(RepairReport report) {
        Map<String, List<String>> grouped = new LinkedHashMap<>();
        for (LinkResult l : report.links()) {
            if (l.reason() != null) {
                grouped.computeIfAbsent(l.reason().label() + ": " + Printable.of(l.message()), k -> new ArrayList<>())
                        .add(l.action().name());
            }
        }
        List<String> parts = new ArrayList<>();
        grouped.forEach((why, names) -> parts.add(why + " (" + Printable.list(names) + ")"));
        report.problems().forEach(p -> parts.add(p.reason().label() + ": " + Printable.of(p.path()) + ": "
                + Printable.of(p.message())));
        List<String> shown = parts.subList(0, Math.min(parts.size(), Printable.MAX_ITEMS));
        return String.join("; ", shown) + (parts.size() > shown.size() ? "; and " + (parts.size() - shown.size())
                + " more" : "");
    }
}
