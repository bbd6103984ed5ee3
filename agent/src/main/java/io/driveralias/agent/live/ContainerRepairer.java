package io.driveralias.agent.live;

import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.core.ContainerScope;
import io.driveralias.agent.core.FailureReason;
import io.driveralias.agent.core.LateRepairCause;
import io.driveralias.agent.core.LruMap;
import io.driveralias.agent.fs.Errno;
import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.logging.Mdc;
import io.driveralias.agent.overlay.CreateTimeSeeder;
import io.driveralias.agent.repair.Failures;
import io.driveralias.agent.repair.LocateRequest;
import io.driveralias.agent.repair.Problem;
import io.driveralias.agent.repair.RepairReport;
import io.driveralias.agent.repair.RootRepairer;
import java.time.Clock;
import java.time.Instant;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import java.util.function.IntSupplier;
import java.util.function.Predicate;

/**
 * Examines one container of one runtime: describe, scope, GPU request, open its root, repair
 * (or plan), verify. Returns what came of it; reporting is the caller's ({@link ExaminationReporter}).
 * A container that did not ask for a GPU is never opened, let alone written. A container whose
 * repair failed is asked once more whether it still runs the same start: one that exited
 * meanwhile is gone, whatever error the race produced, never failed; one that was repaired
 * before its start and is gone before the start path looks counts as repaired.
 */
public final class ContainerRepairer {

    /**
     * What the agent is configured to look for, the same for every container.
     *
     * @param hostDriverFile  whether a host path is one of the host's own driver files (a declared
     *                        bind of one is a GPU request)
     * @param hostDriverFiles how many driver files the host has: while none, a container showing only
     *                        signs of wanting a GPU is looked at, read-only ({@link GpuSigns})
     */
    public record Settings(List<String> libraryDirectories, Predicate<String> hostDriverFile, IntSupplier hostDriverFiles) {

        /** A host whose driver is not in question. */
        public Settings(List<String> libraryDirectories, Predicate<String> hostDriverFile) {
            this(libraryDirectories, hostDriverFile, () -> Integer.MAX_VALUE);
        }
    }

    private final ContainerRuntime runtime;
    private final ContainerRoots roots;
    private final RootRepairer repairer;
    private final ContainerScope scope;
    private final Settings settings;
    private final CreateWork createWork;
    private final Clock clock;
    private final RuntimeFileSets runtimeFiles;
    private final SameStart sameStart;
    private final GoneContainers gone;
    private final DriverLooks looks;
    /**
     * Containers whose create found nothing for their start to write: excluded (a pod's sandbox)
     * or asking for no GPU, as their runtime's record says, which does not change. Their start is
     * still examined and counted, but it is no longer urgent (see {@link #plainStart}). Bounded.
     */
    private final java.util.Set<String> plain = Collections.newSetFromMap(Collections.synchronizedMap(new LruMap<>(4096)));

    /** {@code seeder} null: no repair before start (one-shot commands). */
    public ContainerRepairer(ContainerRuntime runtime, ContainerRoots roots, RootRepairer repairer, ContainerScope scope,
                             Settings settings, CreateTimeSeeder seeder, Clock clock) {
        this(runtime, roots, repairer, scope, settings, seeder, clock, new RuntimeFileSets());
    }

    /** {@code runtimeFiles}: where the files the runtime added at each start are recorded, for {@code seeder}. */
    public ContainerRepairer(ContainerRuntime runtime, ContainerRoots roots, RootRepairer repairer, ContainerScope scope,
                             Settings settings, CreateTimeSeeder seeder, Clock clock, RuntimeFileSets runtimeFiles) {
        this(runtime, roots, repairer, scope, settings, seeder, clock, runtimeFiles, DriverLooks.OFF);
    }

    /** {@code looks}: what a GPU container's examination hands on to be looked at afterwards (its loader's driver). */
    public ContainerRepairer(ContainerRuntime runtime, ContainerRoots roots, RootRepairer repairer, ContainerScope scope,
                             Settings settings, CreateTimeSeeder seeder, Clock clock, RuntimeFileSets runtimeFiles,
                             DriverLooks looks) {
        this.looks = looks;
        this.runtime = runtime;
        this.roots = roots;
        this.repairer = repairer;
        this.scope = scope;
        this.settings = settings;
        this.createWork = new CreateWork(runtime, scope, seeder, clock);
        this.clock = clock;
        this.runtimeFiles = runtimeFiles;
        this.sameStart = new SameStart(runtime, roots);
        this.gone = new GoneContainers(createWork, clock);
    }

    public Optional<Examination> examine(String id, Instant receivedAt, RootRepairer.Mode mode,
                                         Optional<Instant> examinedStart, boolean retry) throws ContainerRuntimeException {
        return examine(id, receivedAt, mode, examinedStart, retry, 0);
    }

    /**
     * @param pid           the container's process, where the event named it (containerd's
     *                      {@code /tasks/create}), else 0
     * @param receivedAt    when the event (or reconcile) that asked for this arrived
     * @param examinedStart the start of this container already examined, if any: the same
     *                      start is not examined twice (create and start of one container)
     *                      unless {@code retry} asks for it (a failed repair, at a reconcile)
     * @return empty when there is nothing to examine: created but not started yet, or this
     *         start was already examined
     * @throws ContainerRuntimeException when the runtime cannot answer: the caller retries later
     */
    public Optional<Examination> examine(String id, Instant receivedAt, RootRepairer.Mode mode,
                                         Optional<Instant> examinedStart, boolean retry, int pid)
            throws ContainerRuntimeException {
        ContainerInfo info;
        try {
            // A process an event just named: its description from the create, if kept, with no round trip.
            Optional<ContainerInfo> starting = pid > 0 ? runtime.describeStarting(id, pid) : Optional.empty();
            info = starting.isPresent() ? starting.get() : runtime.describe(id);
        } catch (ContainerRuntimeException.NoSuchContainer e) {
            ContainerRef ref = new ContainerRef(id, "", "", Optional.empty());
            return Optional.of(gone.gone(ref, Optional.empty(), Optional.empty(), receivedAt, "removed before it could be examined",
                    GoneContainers.Seen.NOT_GPU));
        } catch (ContainerRuntimeException.TooLarge e) {
            ContainerRef ref = new ContainerRef(id, "", "", Optional.empty());
            try (Mdc ignored = Mdc.container(ref)) {
                return Optional.of(finish(ref, ContainerOutcome.FAILED, Optional.of(new RepairReport(Optional.empty(), List.of(),
                        List.of(new Problem("/", FailureReason.TOO_LARGE, "its description is refused: " + e.getMessage())))),
                        Optional.empty(), receivedAt, ""));
            }
        }
        ContainerRef ref = new ContainerRef(info.id(), info.name(), info.image(), ContainerScope.podOf(info.labels()));
        if (!info.running() && info.startedAt().isEmpty()) {
            if (mode == RootRepairer.Mode.APPLY) {
                createWork.seedBeforeStart(info, receivedAt);
            }
            return Optional.empty();
        }
        if (examinedStart.isPresent() && examinedStart.equals(info.startedAt()) && !(retry && info.running())) {
            // This start was examined already (running or not): count it once.
            return Optional.empty();
        }
        try (Mdc ignored = Mdc.container(ref)) {
            Optional<String> excluded = scope.exclusion(info);
            if (excluded.isPresent()) {
                return Optional.of(finish(ref, ContainerOutcome.EXCLUDED, Optional.empty(), info.startedAt(),
                        receivedAt, excluded.get()));
            }
            GpuSigns gpu = GpuSigns.of(info, settings.hostDriverFile());
            if (!info.running()) {
                return Optional.of(gone.gone(ref, info.startedAt(), processNotBefore(info), receivedAt, "exited before it could be examined",
                        gpu.kind() == GpuSigns.Kind.REQUEST ? GoneContainers.Seen.LACKED : GoneContainers.Seen.NOT_GPU));
            }
            boolean strandedSigns = gpu.kind() == GpuSigns.Kind.SIGNS_ONLY && settings.hostDriverFiles().getAsInt() == 0;
            if (gpu.kind() != GpuSigns.Kind.REQUEST && !strandedSigns) {
                return Optional.of(finish(ref, ContainerOutcome.NO_DRIVER, Optional.empty(), info.startedAt(),
                        receivedAt, gpu.detail()));
            }
            // Signs alone are looked at, never written: what they count for is the node's missing driver.
            return Optional.of(withDriverLook(repairRunning(info, ref, receivedAt, strandedSigns ? RootRepairer.Mode.DRY_RUN : mode),
                    info));
        }
    }

    /**
     * A created container described as such ({@link ContainerRuntime#describeCreated}) and, if it
     * asks for a GPU and {@code mayWrite} still lets the create write (its start was not taken
     * meanwhile), its aliases before its start. True when that was all there was to do; false
     * when it must be examined as usual (it started meanwhile, or could not be described).
     */
    public boolean seedCreated(String id, Instant receivedAt, BooleanSupplier mayWrite) {
        if (!createWork.enabled()) {
            return false;
        }
        ContainerInfo info;
        try {
            info = runtime.describeCreated(id);
        } catch (ContainerRuntimeException e) {
            return false;
        }
        if (info.running() || info.startedAt().isPresent()) {
            return false;
        }
        rememberIfPlain(info);
        if (mayWrite.getAsBoolean()) {
            createWork.seedBeforeStart(info, receivedAt);
        }
        return true;
    }

    /** See {@link CreateWork#seedWhileStarting}. */
    public boolean seedWhileStarting(String id, Instant receivedAt, BooleanSupplier mayWrite) {
        return createWork.seedWhileStarting(id, receivedAt, mayWrite, this::rememberIfPlain);
    }

    /**
     * Whether this container's create found it excluded or asking for no GPU: its start then has
     * nothing to write before the first instruction, and need not go ahead of other containers'
     * creates. In a burst of pods each sandbox's two start events went first, ahead of the GPU
     * containers' creates, whose early write then came after their start.
     */
    public boolean plainStart(String id) {
        return plain.contains(id);
    }

    /** The container is removed. */
    public void forget(String id) {
        plain.remove(id);
    }

    private void rememberIfPlain(ContainerInfo info) {
        if (scope.exclusion(info).isPresent() || GpuSigns.of(info, settings.hostDriverFile()).kind() != GpuSigns.Kind.REQUEST) {
            plain.add(info.id());
        }
    }

    /** Whether created containers are repaired before they start ({@code --before-start}). */
    public boolean seedsBeforeStart() {
        return createWork.enabled();
    }

    /** Runs the repair path on a throw-away root, so that the first real container finds it warm. */
    public void warmUp(int rounds) {
        Warmup.run(repairer, roots.resolver(), rounds);
    }

    /** As above, giving way while {@code busy} says containers wait for the agent. */
    public void warmUp(int rounds, BooleanSupplier busy) {
        Warmup.run(repairer, roots.resolver(), rounds, busy, Warmup.hostLoaderCache(roots.hostProc(), roots.resolver()));
    }

    private Examination repairRunning(ContainerInfo info, ContainerRef ref, Instant receivedAt, RootRepairer.Mode mode) {
        RepairReport report;
        Optional<Instant> processStart = Optional.empty();
        boolean stillInInit = false;
        try (OpenedContainer container = roots.open(info, () -> sameStart.requireSameStart(info))) {
            processStart = container.processStartedAt();
            LocateRequest request = LocateRequest.container(settings.libraryDirectories(), container.injectedFiles(),
                    container.hostSources());
            report = repairer.repair(container.root(), request, mode);
            container.requireAlive();
            // After the verification: if the process is still the runtime's init, the container's
            // program has not run yet, and found what was verified.
            stillInInit = container.stillInRuntimeInit();
            runtimeFiles.record(info, report);
        } catch (ErrnoException e) {
            if (e.is(Errno.ESRCH)) {
                return gone.gone(ref, info.startedAt(), processNotBefore(info), receivedAt, e.getMessage(), GoneContainers.Seen.WHILE_WRITING);
            }
            FailureReason reason = Failures.reasonOf(e);
            report = new RepairReport(Optional.empty(), List.of(),
                    List.of(new Problem("/", reason, "cannot open the container: " + e.getMessage())));
        }
        if (report.outcome() == ContainerOutcome.FAILED && !sameStart.stillSameStart(info)) {
            // Before the create's work is taken here: see GoneContainers#exitedDuringRepair.
            return gone.exitedDuringRepair(ref, info.startedAt(), processNotBefore(info), receivedAt, report);
        }
        CreateWork.Seeded seed = createWork.takeSeeded(info.id()).orElse(null);
        LateRepairCause skipped = createWork.takeSkipped(info.id()).orElse(null);
        boolean addedAtStart = !report.applied().isEmpty();
        Optional<Instant> created = processStart.or(() -> processNotBefore(info));
        if (seed != null) {
            report = report.withSeeded(seed.links());
            // Everything was in place before the container's first instruction: written before its
            // process existed, and the start path had nothing to add.
            if (!addedAtStart && !report.applied().isEmpty() && (seed.beforeProgram()
                    || FirstInstruction.aliasesWereThere(Optional.of(seed.seededAt()), created, false))) {
                // No exposure, whatever the runtime's record of the start says (Docker 26 and later
                // stamp it before the process is made, Docker 20.10 after it ran).
                return new Examination(ref, report.outcome(), Optional.of(report), info.startedAt(), seed.receivedAt(),
                        seed.seededAt(), "before start").processStarted(Optional.of(seed.seededAt()));
            }
        }
        if (stillInInit && report.outcome() != ContainerOutcome.FAILED) {
            // Verified before the container's program ran: no exposure, whoever wrote the aliases.
            Instant verified = clock.instant();
            return new Examination(ref, report.outcome(), Optional.of(report), info.startedAt(), receivedAt, verified,
                    "before start").processStarted(Optional.of(verified));
        }
        Examination result = finish(ref, report.outcome(), Optional.of(report), info.startedAt(), receivedAt, "")
                .processStarted(processStart);
        if (seed != null && !addedAtStart && report.outcome() != ContainerOutcome.FAILED) {
            // Complete since the create's work, though not provably before the program began (written
            // between runc's making the process and its start): exposed until then at most, not until now.
            result = new Examination(ref, report.outcome(), Optional.of(report), info.startedAt(), seed.receivedAt(),
                    seed.seededAt(), "").processStarted(processStart);
        }
        if (!addedAtStart && seed == null) {
            return result;
        }
        // The aliases were not provably there at the first instruction: say why.
        return result.late(FirstInstruction.cause(skipped, seed != null, addedAtStart, createWork.enabled(),
                info.overlay().isPresent()));
    }

    /** A GPU container the examination opened and repaired (or could not): what its loader takes, to be looked at later. */
    private Examination withDriverLook(Examination e, ContainerInfo info) {
        boolean opened = e.outcome() == ContainerOutcome.REPAIRED || e.outcome() == ContainerOutcome.HEALTHY
                || e.outcome() == ContainerOutcome.FAILED;
        return e.report().filter(r -> opened).map(r -> e.withDriverLook(looks.of(info, r, () -> sameStart.requireSameStart(info))))
                .orElse(e);
    }

    /**
     * An instant no later than the creation of the container's process, from its description: its
     * start where the runtime records it so (the kernel's record, or a runtime that stamps a start
     * before it makes the process), else none (Docker before 26 stamps it after the process ran).
     */
    static Optional<Instant> processNotBefore(ContainerInfo info) {
        return info.startedAt().filter(s -> info.startBeforeProcess());
    }

    private Examination finish(ContainerRef ref, ContainerOutcome outcome, Optional<RepairReport> report,
                               Optional<java.time.Instant> startedAt, Instant receivedAt, String detail) {
        return new Examination(ref, outcome, report, startedAt, receivedAt, clock.instant(), detail);
    }
}
