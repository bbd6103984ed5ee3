package io.driveralias.agent.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.ContainerdVersion;
import io.driveralias.agent.testing.SharedEngines;
import io.driveralias.agent.testing.ShippedJvm;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * A short run of the benchmark in every CI build, so that it keeps working. It prints the
 * figures; it asserts only that every container was served and every figure measured, never
 * how fast. The loops skip the Docker restart here (they do not resubscribe; nothing is asserted
 * of them there).
 */
@Timeout(600)
@ResourceLock(SharedEngines.DOCKER)
@ResourceLock(SharedEngines.CONTAINERD)
class BenchmarkSmokeIT {

    @Test
    void aSmallBenchmarkRunsAndTheAgentMissesNothing() throws Exception {
        BenchmarkRun.Settings small = new BenchmarkRun.Settings(2, 3, 3, 3, Duration.ofMillis(300), 2, 15, 0, 1,
                Duration.ofSeconds(1), false);

        List<BenchmarkRun.Result> results = RepairBenchmark.run(small, true, true, true);

        assertThat(results).extracting(BenchmarkRun.Result::subject)
                .containsExactly("agent", BenchmarkReport.START_PATH_ONLY, "floor loop", "shell loop");
        for (BenchmarkRun.Result agent : results.subList(0, 2)) {
            assertThat(agent.startMissed()).as(agent.subject()).isZero();
            assertThat(agent.restartMissed()).as(agent.subject()).isZero();
            assertThat(agent.restartTotal()).as(agent.subject()).isEqualTo(2);
            assertThat(agent.warmAllocatedPerContainerBytes()).as(agent.subject()).isPositive();
        }
        assertThat(results).allSatisfy(r -> assertThat(r.startTotal()).isEqualTo(6));
        assertThat(results).allSatisfy(r -> assertThat(r.burstTotal()).isEqualTo(3));
    }

    /**
     * The NRI phase's measure in small (containerd 2.1, one round, two pods of each kind, no busy
     * loops): every start seen by the plugins around the measured one, and the agent's GPU pods
     * at their first instruction.
     */
    @Test
    @Timeout(120)
    void theNriPhaseMeasuresEveryStart() throws Exception {
        NriStartTimes.Result r = NriStartTimes.run(new NriStartTimes.Settings(ContainerdVersion.V2_1, 1, 2, 1, -1),
                ShippedJvm.commandLineOptions());
        System.out.println(NriReport.startTimes(r));

        assertThat(r.samples()).hasSize(8);
        assertThat(r.samples()).allSatisfy(s -> assertThat(s.heldMs()).isNotNaN().isPositive());
        assertThat(r.samples()).filteredOn(s -> s.gpu() && s.subject().equals(NriStartTimes.AGENT))
                .hasSize(2).allSatisfy(s -> assertThat(s.present()).as("aliases at the first instruction").isTrue());
    }
}
