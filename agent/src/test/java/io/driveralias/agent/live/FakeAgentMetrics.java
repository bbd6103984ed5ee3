package io.driveralias.agent.live;

import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.core.FailureReason;
import io.driveralias.agent.metrics.RepairMetrics;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.BooleanSupplier;

/** Records what the agent counted, thread-safe; tests wait for counts rather than sleep. */
final class FakeAgentMetrics implements RepairMetrics {

    private final List<ContainerOutcome> examined = new ArrayList<>();
    private final List<String> created = new ArrayList<>();
    private final Set<String> unrepaired = new HashSet<>();
    private final List<FailureReason> failures = new ArrayList<>();
    private final List<Duration> exposures = new ArrayList<>();
    private int refused;
    private volatile boolean dockerUp;

    synchronized List<ContainerOutcome> examined() {
        return List.copyOf(examined);
    }

    synchronized long examined(ContainerOutcome outcome) {
        return examined.stream().filter(outcome::equals).count();
    }

    synchronized List<String> created() {
        return List.copyOf(created);
    }

    synchronized Set<String> unrepaired() {
        return Set.copyOf(unrepaired);
    }

    synchronized List<FailureReason> failures() {
        return List.copyOf(failures);
    }

    synchronized List<Duration> exposures() {
        return List.copyOf(exposures);
    }

    synchronized int refused() {
        return refused;
    }

    boolean dockerUp() {
        return dockerUp;
    }

    @Override
    public synchronized void containerExamined(ContainerOutcome outcome) {
        examined.add(outcome);
    }

    @Override
    public synchronized void linkCreated(String library) {
        created.add(library);
    }

    @Override
    public synchronized void unrepaired(ContainerRef container, Collection<FailureReason> reasons) {
        unrepaired.add(container.id());
    }

    @Override
    public synchronized void repairFailed(FailureReason reason) {
        failures.add(reason);
    }

    @Override
    public synchronized void exposure(Duration duration) {
        exposures.add(duration);
    }

    @Override
    public synchronized void resolved(String containerId) {
        unrepaired.remove(containerId);
    }

    private final List<io.driveralias.agent.core.DriverLoad.Verdict> driverVerdicts = new ArrayList<>();
    private final java.util.Set<String> mismatched = new java.util.LinkedHashSet<>();

    @Override
    public synchronized void containerDriver(io.driveralias.agent.core.DriverLoad.Verdict loads) {
        driverVerdicts.add(loads);
    }

    @Override
    public synchronized void driverMismatch(io.driveralias.agent.core.ContainerRef container,
                                            io.driveralias.agent.core.DriverLoad load) {
        mismatched.add(container.id());
    }

    @Override
    public synchronized void driverMatched(String containerId) {
        mismatched.remove(containerId);
    }

    synchronized List<io.driveralias.agent.core.DriverLoad.Verdict> driverVerdicts() {
        return List.copyOf(driverVerdicts);
    }

    synchronized List<String> mismatched() {
        return List.copyOf(mismatched);
    }

    private final List<io.driveralias.agent.core.LateRepairCause> late = new ArrayList<>();
    private volatile Boolean ownPodVisible;

    @Override
    public void ownPodVisible(boolean visible) {
        ownPodVisible = visible;
    }

    Boolean ownPodVisible() {
        return ownPodVisible;
    }

    @Override
    public synchronized void repairedAfterStart(io.driveralias.agent.core.LateRepairCause cause) {
        late.add(cause);
    }

    synchronized List<io.driveralias.agent.core.LateRepairCause> late() {
        return List.copyOf(late);
    }

    @Override
    public synchronized void queueRefused(int containers) {
        refused += containers;
    }

    @Override
    public void runtimeConnected(String runtime, boolean up) {
        if (runtime.equals("docker")) {
            dockerUp = up;
        }
    }

    /** Polls {@code condition} every few milliseconds until it holds or {@code timeout} passes. */
    static void await(String what, Duration timeout, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + timeout + ": " + what);
            }
            Thread.sleep(5);
        }
    }
}
