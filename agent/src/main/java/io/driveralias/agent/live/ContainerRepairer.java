package io.driveralias.agent.live;

import io.driveralias.agent.core.ActionKind;
import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.core.ContainerScope;
import io.driveralias.agent.core.FailureReason;
import io.driveralias.agent.core.LinkAction;
import io.driveralias.agent.core.LruMap;
import io.driveralias.agent.docker.ContainerInfo;
import io.driveralias.agent.docker.DockerApi;
import io.driveralias.agent.docker.DockerException;
import io.driveralias.agent.fs.Errno;
import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.kube.PodEvents;
import io.driveralias.agent.logging.Mdc;
import io.driveralias.agent.metrics.RepairMetrics;
import io.driveralias.agent.overlay.CreateTimeSeeder;
import io.driveralias.agent.repair.Failures;
import io.driveralias.agent.repair.LinkResult;
import io.driveralias.agent.repair.LocateRequest;
import io.driveralias.agent.repair.RepairReport;
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
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Examines one container: inspect, scope, open its root, repair (or plan), verify, and
 * report what came of it once: metrics, one log line for a repaired or failed container,
 * an Event on its pod, and an ld.so.cache refresh where links were made.
 */
public final class ContainerRepairer {

    private static final Logger LOG = LoggerFactory.getLogger(ContainerRepairer.class);

    /** What the agent is configured to look for, the same for every container. */
    public record Settings(List<String> libraryDirectories, Optional<String> driverVersion) {
    }

    private final DockerApi docker;
    private final ContainerRoots roots;
    private final RootRepairer repairer;
    private final ContainerScope scope;
    private final Settings settings;
    private final RepairMetrics metrics;
    private final PodEvents podEvents;
    private final LdconfigRunner ldconfig;
    private final CreateTimeSeeder seeder;
    private final Clock clock;
    /** Containers seeded at create, until their start is verified. Bounded: some never start. */
    private final Map<String, Seeded> seeded = Collections.synchronizedMap(new LruMap<>(4096));

    /** Links written into a created container's upper layer, and when. */
    private record Seeded(Instant receivedAt, Instant seededAt, List<LinkAction> links) {
    }

    /**
     * {@code ldconfig} null: never refresh ld.so.cache ({@code --ldconfig off}). {@code seeder}
     * null: no repair before start (one-shot commands).
     */
    public ContainerRepairer(DockerApi docker, ContainerRoots roots, RootRepairer repairer, ContainerScope scope,
                             Settings settings, RepairMetrics metrics, PodEvents podEvents, LdconfigRunner ldconfig,
                             CreateTimeSeeder seeder, Clock clock) {
        this.docker = docker;
        this.roots = roots;
        this.repairer = repairer;
        this.scope = scope;
        this.settings = settings;
        this.metrics = metrics;
        this.podEvents = podEvents;
        this.ldconfig = ldconfig;
        this.seeder = seeder;
        this.clock = clock;
    }

    /**
     * @param receivedAt    when the event (or reconcile) that asked for this arrived
     * @param examinedStart the start of this container already examined, if any: the same
     *                      start is not examined twice (create and start of one container)
     * @return empty when there is nothing to examine: created but not started yet, or this
     *         start was already examined
     * @throws DockerException when Docker cannot answer: the caller retries later
     */
    public Optional<Examination> examine(String id, Instant receivedAt, RootRepairer.Mode mode,
                                         Optional<Instant> examinedStart) throws DockerException {
        ContainerInfo info;
        try {
            info = docker.inspect(id);
        } catch (DockerException.NoSuchContainer e) {
            ContainerRef ref = new ContainerRef(id, "", "", Optional.empty());
            return Optional.of(finish(ref, ContainerOutcome.GONE, Optional.empty(), Optional.empty(), receivedAt,
                    "removed before it could be examined", mode));
        }
        ContainerRef ref = new ContainerRef(info.id(), info.name(), info.image(), ContainerScope.podOf(info.labels()));
        if (!info.running() && info.startedAt().isEmpty()) {
            seedBeforeStart(info, receivedAt, mode);
            return Optional.empty();
        }
        if (examinedStart.isPresent() && examinedStart.equals(info.startedAt())) {
            // This start was examined already (running or not): count it once.
            return Optional.empty();
        }
        try (Mdc ignored = Mdc.container(ref)) {
            Optional<String> excluded = scope.exclusion(info.image(), info.labels());
            if (excluded.isPresent()) {
                return Optional.of(finish(ref, ContainerOutcome.EXCLUDED, Optional.empty(), info.startedAt(),
                        receivedAt, excluded.get(), mode));
            }
            if (!info.running()) {
                return Optional.of(finish(ref, ContainerOutcome.GONE, Optional.empty(), info.startedAt(), receivedAt,
                        "exited before it could be examined", mode));
            }
            return Optional.of(repairRunning(info, ref, receivedAt, mode));
        }
    }

    /** Runs the repair path on a throw-away root, so that the first real container finds it warm. */
    public void warmUp(int rounds) {
        Warmup.run(repairer, roots.resolver(), rounds);
    }

    /** A created container whose driver mounts are declared: write its aliases before it starts. */
    private void seedBeforeStart(ContainerInfo info, Instant receivedAt, RootRepairer.Mode mode) {
        // A read-only root filesystem is the owner's choice: its writable layer is not ours to fill.
        if (seeder == null || mode != RootRepairer.Mode.APPLY || info.readOnlyRootfs()
                || scope.exclusion(info.image(), info.labels()).isPresent()) {
            return;
        }
        List<LinkAction> links = seeder.seed(info);
        if (!links.isEmpty()) {
            seeded.put(info.id(), new Seeded(receivedAt, clock.instant(), links));
        }
    }

    private Examination repairRunning(ContainerInfo info, ContainerRef ref, Instant receivedAt, RootRepairer.Mode mode) {
        RepairReport report;
        try (OpenedContainer container = roots.open(info, () -> requireSameStart(info))) {
            LocateRequest request = new LocateRequest(settings.libraryDirectories(), settings.driverVersion(),
                    container.injectedFiles(), container.hostSources());
            report = repairer.repair(container.root(), request, mode);
            container.requireAlive();
        } catch (ErrnoException e) {
            if (e.is(Errno.ESRCH)) {
                return finish(ref, ContainerOutcome.GONE, Optional.empty(), info.startedAt(), receivedAt, e.getMessage(),
                        mode);
            }
            FailureReason reason = Failures.reasonOf(e);
            report = new RepairReport(Optional.empty(), List.of(),
                    List.of(new io.driveralias.agent.repair.Problem("/", reason, "cannot open the container: " + e.getMessage())));
        }
        Seeded seed = seeded.remove(info.id());
        boolean beforeStart = false;
        if (seed != null) {
            report = report.withSeeded(seed.links());
            // Everything was in place before the container's first instruction.
            beforeStart = report.applied().size() == seed.links().size();
        }
        Examination result = beforeStart
                ? finish(ref, report.outcome(), Optional.of(report), info.startedAt(), seed.receivedAt(), "before start",
                        mode, seed.seededAt())
                : finish(ref, report.outcome(), Optional.of(report), info.startedAt(), receivedAt, "", mode);
        if (mode == RootRepairer.Mode.APPLY && ldconfig != null && !report.applied().isEmpty()) {
            ldconfig.refreshLater(ref);
        }
        return result;
    }

    /** The container still runs the process that was examined: same pid, same start. */
    private void requireSameStart(ContainerInfo examined) throws ErrnoException {
        try {
            ContainerInfo now = docker.inspect(examined.id());
            if (now.running() && now.pid() == examined.pid() && now.startedAt().equals(examined.startedAt())) {
                return;
            }
        } catch (DockerException.NoSuchContainer e) {
            // Removed: gone.
        } catch (DockerException e) {
            throw new ErrnoException("inspect", examined.id() + ": " + e.getMessage(), Errno.EIO);
        }
        throw new ErrnoException("container", examined.id() + " (exited)", Errno.ESRCH);
    }

    private Examination finish(ContainerRef ref, ContainerOutcome outcome, Optional<RepairReport> report,
                               Optional<Instant> startedAt, Instant receivedAt, String detail,
                               RootRepairer.Mode mode) {
        return finish(ref, outcome, report, startedAt, receivedAt, detail, mode, clock.instant());
    }

    /**
     * @param verifiedAt when the aliases were known to be right: for a container seeded
     *                   before its start, when the seeding finished (exposure 0)
     */
    private Examination finish(ContainerRef ref, ContainerOutcome outcome, Optional<RepairReport> report,
                               Optional<Instant> startedAt, Instant receivedAt, String detail,
                               RootRepairer.Mode mode, Instant verifiedAt) {
        Instant now = verifiedAt;
        // From the moment the repair could begin: the event's arrival, or the container's start
        // when a create event was still waiting for it.
        Instant from = startedAt.filter(s -> s.isAfter(receivedAt) && !s.isAfter(now)).orElse(receivedAt);
        Duration took = Duration.between(from, now);
        Examination examination = new Examination(ref, outcome, report, startedAt, took, detail);
        metrics.containerExamined(outcome);
        // A dry run (check) prints its report; only real repairs are logged and announced.
        boolean announce = mode == RootRepairer.Mode.APPLY;
        if (outcome == ContainerOutcome.FAILED) {
            metrics.unrepaired(ref, report.map(RepairReport::failureReasons).orElse(java.util.Set.of()));
            report.ifPresent(r -> r.failureReasons().forEach(metrics::repairFailed));
            if (!announce) {
                return examination;
            }
            report.ifPresent(r -> podEvents.failed(ref, r));
            LOG.warn("container {} ({}) is not repaired: {} after {} ms{}", ref.shortId(), ref.displayName(),
                    report.map(ContainerRepairer::failures).orElse(detail), took.toMillis(), image(ref));
        } else {
            metrics.resolved(ref.id());
        }
        if (outcome == ContainerOutcome.REPAIRED && announce) {
            RepairReport r = report.orElseThrow();
            for (LinkResult link : r.applied()) {
                if (link.action().kind() == ActionKind.CREATE) {
                    metrics.linkCreated(link.action().name());
                } else {
                    metrics.linkReplaced(link.action().name());
                }
            }
            metrics.repairDuration(took);
            startedAt.ifPresent(s -> metrics.exposure(now.isBefore(s) ? Duration.ZERO : Duration.between(s, now)));
            r.driverVersion().ifPresent(metrics::driverVersion);
            podEvents.repaired(ref, r);
            LOG.info("repaired container {} ({}){}: {} link(s) in {} ms: {}{}", ref.shortId(), ref.displayName(),
                    detail.isEmpty() ? "" : " " + detail, r.applied().size(), took.toMillis(),
                    r.applied().stream().map(l -> l.action().name()).collect(Collectors.joining(", ")), image(ref));
        } else if (outcome != ContainerOutcome.FAILED) {
            LOG.debug("container {} ({}): {} {}", ref.shortId(), ref.displayName(), outcome.label(), detail);
        }
        return examination;
    }

    private static String image(ContainerRef ref) {
        return ref.image().isEmpty() ? "" : " [image " + ref.image() + "]";
    }

    /** "reason: message: alias, alias; reason: ..." with links that failed alike grouped together. */
    private static String failures(RepairReport report) {
        Map<String, List<String>> grouped = new LinkedHashMap<>();
        for (LinkResult l : report.links()) {
            if (l.reason() != null) {
                grouped.computeIfAbsent(l.reason().label() + ": " + l.message(), k -> new ArrayList<>())
                        .add(l.action().name());
            }
        }
        List<String> parts = new ArrayList<>();
        grouped.forEach((why, names) -> parts.add(why + " (" + String.join(", ", names) + ")"));
        report.problems().forEach(p -> parts.add(p.reason().label() + ": " + p.path() + ": " + p.message()));
        return String.join("; ", parts);
    }
}
