package io.driveralias.agent.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A short run of the benchmark in every CI build, so that it keeps working. It prints the
 * figures; it asserts only that every container was served and every figure measured, never
 * how fast. The loops skip the Docker restart here (they do not resubscribe; nothing is asserted
 * of them there).
 */
@Timeout(600)
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
}
