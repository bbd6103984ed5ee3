package io.driveralias.agent.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.ContainerdVersion;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The NRI report's arithmetic: what is added is the agent's percentile less the at-once plugin's, judged on p99. */
class NriReportTest {

    private static List<NriStartTimes.Sample> samples(String subject, boolean gpu, double held, int n) {
        List<NriStartTimes.Sample> list = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            // CRI StartContainer = its three parts; CreateContainer 50 ms.
            list.add(new NriStartTimes.Sample(subject, gpu, 100 + held + i, 60, held, 40 + i, 50, gpu));
        }
        return list;
    }

    private static NriStartTimes.Result result(double gpuHeld, double plainHeld) {
        List<NriStartTimes.Sample> all = new ArrayList<>();
        all.addAll(samples(NriStartTimes.AGENT, true, gpuHeld, 10));
        all.addAll(samples(NriStartTimes.AT_ONCE, true, 2, 10));
        all.addAll(samples(NriStartTimes.AGENT, false, plainHeld, 10));
        all.addAll(samples(NriStartTimes.AT_ONCE, false, 2, 10));
        NriStartTimes.Cpu cpu = new NriStartTimes.Cpu(1.5, 10, Map.of("repair-", 100.0));
        return new NriStartTimes.Result(new NriStartTimes.Settings(ContainerdVersion.V2_1, 1, 10, 0, 0), "2.1.9", all, cpu,
                new NriStartTimes.Cpu(0.4, 10, Map.of()), List.of(5.0), List.of(new NriStartTimes.Rss(90, 85)), "1 1 1", "2 2 2");
    }

    @Test
    void theAddedTimeIsTheDifferenceOfPercentilesAndIsJudgedOnP99() {
        String report = NriReport.startTimes(result(12, 2.5));

        assertThat(report).contains("held (index 10's answer to 90's call)").containsPattern(
                "held \\(index 10's answer to 90's call\\)\\s+12\\.0 /\\s+12\\.0 /\\s+12\\.0\\s+2\\.0 /\\s+2\\.0 /\\s+2\\.0"
                        + "\\s+10\\.00 /\\s+10\\.00 /\\s+10\\.00  \\(p99 target <= 20 ms: met\\)");
        assertThat(report).containsPattern("held \\(index 10's answer to 90's call\\)\\s+2\\.5 /\\s+2\\.5 /\\s+2\\.5\\s+2\\.0 /\\s+2\\.0 /"
                + "\\s+2\\.0\\s+0\\.50 /\\s+0\\.50 /\\s+0\\.50  \\(p99 target <= 1 ms: met\\)");
        assertThat(report).contains("the agent's RSS at the end of each of its blocks (peak / then, MiB): 90.0 / 85.0");
        assertThat(NriReport.startTimes(result(25, 3.5))).contains("p99 target <= 20 ms: MISSED").contains("p99 target <= 1 ms: MISSED");
    }

    @Test
    void aCpuFigureFromLessThanASecondOfCpuIsMarked() {
        assertThat(NriReport.cpu(1.5, 10, "pod")).isEqualTo("150.00 ms per pod (1.50 s of CPU over 10)");
        assertThat(NriReport.cpu(0.4, 10, "pod")).contains("UNDER 1 s OF CPU");
        assertThat(NriReport.startTimes(result(12, 2.5))).contains("40.00 ms per ordinary pod (0.40 s of CPU over 10; UNDER 1 s OF CPU");
    }
}
