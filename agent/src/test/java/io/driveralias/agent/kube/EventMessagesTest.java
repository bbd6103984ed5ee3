package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.core.FailureReason;
import io.driveralias.agent.repair.LinkResult;
import io.driveralias.agent.repair.Problem;
import io.driveralias.agent.repair.RepairReport;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

class EventMessagesTest {

    private static final String LIB = Reports.LIB;
    private static final String V = Reports.V;

    @Test
    void aRepairListsTheLinksByDirectoryCreatedFirst() {
        RepairReport report = new RepairReport(Optional.of(V), List.of(
                Reports.created(LIB, "libcuda.so.1", "libcuda.so." + V),
                Reports.replaced("/usr/lib64", "libnvidia-ml.so.1", "libnvidia-ml.so." + V, "dangling"),
                Reports.created(LIB, "libnvidia-nvvm.so.4", "libnvidia-nvvm.so." + V)), List.of());

        assertThat(EventMessages.repaired(report)).isEqualTo("Repaired NVIDIA driver aliases (driver 535.104.05):"
                + " created in /usr/lib/x86_64-linux-gnu: libcuda.so.1 -> libcuda.so.535.104.05,"
                + " libnvidia-nvvm.so.4 -> libnvidia-nvvm.so.535.104.05;"
                + " replaced in /usr/lib64: libnvidia-ml.so.1 -> libnvidia-ml.so.535.104.05 (was: dangling)");
    }

    @Test
    void aReadOnlyRootSaysWhatTheOwnerCanDo() {
        assertThat(EventMessages.failed(Reports.readOnly())).isEqualTo(
                "NVIDIA driver aliases are missing (driver 535.104.05). read_only: the container's root filesystem"
                        + " is read-only: mount the driver with its aliases or make the library directory writable"
                        + " (/usr/lib/x86_64-linux-gnu/libcuda.so.1, /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1).");
    }

    @Test
    void eachReasonGetsItsSentenceAndAtMostThreePaths() {
        List<LinkResult> links = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            links.add(Reports.failedLink(LIB, "libnvidia-" + i + ".so.1", "libnvidia-" + i + ".so." + V,
                    FailureReason.CONFLICT));
        }
        RepairReport report = new RepairReport(Optional.of(V), links,
                List.of(new Problem("/usr/lib64", FailureReason.UNSAFE_PATH, "symlink to /")));

        String message = EventMessages.failed(report);

        assertThat(message).contains("conflict: a regular file or directory holds the alias name",
                "libnvidia-2.so.1 and 2 more).", "unsafe_path: the library path leads out of the container",
                "(/usr/lib64).");
        assertThat(message.indexOf("conflict:")).isLessThan(message.indexOf("unsafe_path:"));
    }

    @ParameterizedTest
    @EnumSource(FailureReason.class)
    void everyReasonHasAdvice(FailureReason reason) {
        String message = EventMessages.failed(Reports.problem(reason, "/usr/lib64/libcuda.so.1"));
        assertThat(message).contains(reason.label() + ": " + EventMessages.advice(reason));
        assertThat(EventMessages.advice(reason)).hasSizeGreaterThan(30);
    }

    @Test
    void anUnexplainedFailurePointsAtTheLog() {
        assertThat(EventMessages.failed(new RepairReport(Optional.empty(), List.of(), List.of())))
                .isEqualTo("NVIDIA driver aliases are missing. The agent could not repair this container:"
                        + " see the driver-alias-agent log on this node.");
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 12, 13, 14, 40, 500})
    void aLongRepairIsCutAtAnItemAndSaysHowManyMore(int links) {
        String message = EventMessages.repaired(Reports.repairedMany(links));

        assertThat(message.getBytes(StandardCharsets.UTF_8).length).isLessThanOrEqualTo(EventMessages.MAX_BYTES);
        int shown = (int) message.chars().filter(c -> c == '>').count();
        if (shown < links) {
            assertThat(message).endsWith(" and " + (links - shown) + " more");
        } else {
            assertThat(message).doesNotContain("more");
        }
        assertThat(message).doesNotContain(", ,").doesNotEndWith(",");
    }

    @Test
    void aLongFailureStaysUnderTheCap() {
        List<LinkResult> links = new ArrayList<>();
        String longDir = "/" + "d".repeat(200);
        for (FailureReason reason : FailureReason.values()) {
            links.add(Reports.failedLink(longDir, "lib" + reason.label() + ".so.1", "x.so." + V, reason));
        }

        String message = EventMessages.failed(new RepairReport(Optional.of(V), links, List.of()));

        assertThat(message.getBytes(StandardCharsets.UTF_8).length).isLessThanOrEqualTo(EventMessages.MAX_BYTES);
        assertThat(message).startsWith("NVIDIA driver aliases are missing").endsWith("…");
    }

    @Test
    void controlCharactersFromAContainerCannotForgeLines() {
        RepairReport report = Reports.problem(FailureReason.CONFLICT, "/usr/lib64/libcuda.so.1\nWarning\tFake");

        assertThat(EventMessages.failed(report)).contains("/usr/lib64/libcuda.so.1?Warning?Fake")
                .doesNotContain("\n", "\t");
    }

    @Test
    void multiByteNamesCountInBytes() {
        List<LinkResult> links = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            links.add(Reports.created("/opt/é", "libé" + i + ".so.1", "libé" + i + ".so." + V));
        }

        String message = EventMessages.repaired(new RepairReport(Optional.of(V), links, List.of()));

        assertThat(message.getBytes(StandardCharsets.UTF_8).length).isLessThanOrEqualTo(EventMessages.MAX_BYTES);
        assertThat(message).endsWith("more");
    }
}
