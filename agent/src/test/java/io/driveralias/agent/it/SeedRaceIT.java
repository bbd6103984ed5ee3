package io.driveralias.agent.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.ContainerdHarness;
import io.driveralias.agent.testing.CpuHog;
import io.driveralias.agent.testing.SharedEngines;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * {@code ctr run} starts a container within milliseconds of creating it, so the agent's write
 * into the container's writable layer races the runtime's mount of it: 100 such containers with
 * the driver's files as declared binds, beside a busy loop on each core. Every one is repaired by
 * its create's work or, where that lost the race, by its start path at once (never left for a
 * later reconcile), none is reported failed, and no temporary name of the agent's stays in any
 * writable layer.
 */
@Timeout(600)
@ResourceLock(SharedEngines.CONTAINERD)
class SeedRaceIT {

    static final int N = Integer.getInteger("it.seedRace.containers", 100);

    @Test
    void aHundredCtrRunsWithDeclaredBindsAreAllRepairedAtTheirStartAtTheLatestAndLeaveNothingBehind() throws IOException {
        ContainerdHarness containerd = ContainerdHarness.get();
        String image = containerd.debianImage(ContainerdHarness.K8S);
        List<String> ids = new ArrayList<>();
        try (AgentProcess agent = AgentProcess.startOnContainerd(containerd)) {
            agent.await("/readyz 200", Duration.ofSeconds(60), () -> agent.readyz() == 200);
            try (CpuHog hog = new CpuHog(0)) {
                for (int i = 0; i < N; i++) {
                    String id = "seed-race-" + i + "-" + UUID.randomUUID().toString().substring(0, 8);
                    ids.add(containerd.ctrRun(ContainerdHarness.K8S, CriProbes.ctrBinds(), image, id, "sleep", "30"));
                }
                for (String id : ids) {
                    agent.awaitLog("repaired container " + id.substring(0, 12) + " ", Duration.ofSeconds(60));
                }
            }
            List<String> failed = agent.logLines(" is not repaired");
            double failures = agent.metrics().lines().filter(l -> l.startsWith("driver_alias_repair_failures_total{"))
                    .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).sum();
            List<Path> leftovers = leftovers(containerd.rootDir());
            int before = CriProbes.reportedBeforeStart(agent, ids.stream().map(id -> id.substring(0, 12)).toList());
            System.out.printf("[seed-race] %d ctr run with declared binds beside %s: repaired %d, of them before start %d;"
                    + " failures %s; temporary names left in writable layers %d%n", N, CpuHog.describe(0),
                    N - failed.size(), before, failures, leftovers.size());
            assertThat(failed).as("no container reported unrepaired").isEmpty();
            assertThat(failures).as("driver_alias_repair_failures_total").isZero();
            assertThat(leftovers).as("the agent's temporary names in writable layers").isEmpty();
            assertThat(agent.logLines("ERROR")).isEmpty();
        } finally {
            ids.forEach(id -> containerd.remove(ContainerdHarness.K8S, id));
        }
    }

    /** Names of the agent's temporaries ({@code .<name>.driver-alias-<hex>}) anywhere in the overlayfs snapshots. */
    private static List<Path> leftovers(Path containerdRoot) {
        Path snapshots = containerdRoot.resolve("io.containerd.snapshotter.v1.overlayfs/snapshots");
        try (Stream<Path> all = Files.walk(snapshots)) {
            return all.filter(p -> p.getFileName().toString().contains(".driver-alias-")).toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
