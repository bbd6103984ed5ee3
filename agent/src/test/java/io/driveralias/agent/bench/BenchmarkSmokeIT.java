package io.driveralias.agent.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A short run of the benchmark in every CI build, so that it keeps working. It prints the
 * figures; it asserts only that every container was served, never how fast.
 */
@Timeout(600)
class BenchmarkSmokeIT {

    @Test
    void aSmallBenchmarkRunsAndTheAgentMissesNothing() throws Exception {
        BenchmarkRun.Settings small = new BenchmarkRun.Settings(6, 3, 4, Duration.ofMillis(300), 3, 15);

        List<BenchmarkRun.Result> results = RepairBenchmark.run(small, true, true, true);

        assertThat(results).extracting(BenchmarkRun.Result::subject)
                .containsExactly("agent", BenchmarkReport.START_PATH_ONLY, "floor loop", "shell loop");
        for (BenchmarkRun.Result agent : results.subList(0, 2)) {
            assertThat(agent.startMissed()).as(agent.subject()).isZero();
            assertThat(agent.restartMissed()).as(agent.subject()).isZero();
            assertThat(agent.startTotal()).isEqualTo(12);
        }
        assertThat(results).allSatisfy(r -> assertThat(r.startTotal()).isEqualTo(12));
    }
}
