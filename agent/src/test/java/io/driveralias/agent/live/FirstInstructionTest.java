package io.driveralias.agent.live;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.core.LateRepairCause;
import java.time.Instant;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class FirstInstructionTest {

    private static final Instant T = Instant.parse("2026-12-01T10:00:00Z");

    @Test
    void onlyWhatProvesItCounts() {
        assertThat(FirstInstruction.aliasesWereThere(Optional.of(T), Optional.of(T.plusMillis(1)), false))
                .as("written before the process was made").isTrue();
        assertThat(FirstInstruction.aliasesWereThere(Optional.of(T), Optional.of(T), false)).as("the same moment: not proven")
                .isFalse();
        assertThat(FirstInstruction.aliasesWereThere(Optional.of(T.plusMillis(5)), Optional.of(T), false))
                .as("written after the process was made, its program begun when verified").isFalse();
        assertThat(FirstInstruction.aliasesWereThere(Optional.of(T.plusMillis(5)), Optional.of(T), true))
                .as("verified while the process was still the runtime's init").isTrue();
        assertThat(FirstInstruction.aliasesWereThere(Optional.of(T), Optional.empty(), false)).as("no start known").isFalse();
        assertThat(FirstInstruction.aliasesWereThere(Optional.empty(), Optional.of(T), false)).isFalse();
    }

    @Test
    void theCauseSaysWhatWasAndWasNotDone() {
        assertThat(FirstInstruction.cause(LateRepairCause.NO_OVERLAY, true, true, true, true)).isEqualTo(LateRepairCause.NO_OVERLAY);
        assertThat(FirstInstruction.cause(null, true, true, true, true)).isEqualTo(LateRepairCause.INCOMPLETE);
        assertThat(FirstInstruction.cause(null, true, false, true, true)).isEqualTo(LateRepairCause.SLOW_CREATE);
        assertThat(FirstInstruction.cause(null, false, true, false, true)).isEqualTo(LateRepairCause.DISABLED);
        assertThat(FirstInstruction.cause(null, false, true, true, true)).isEqualTo(LateRepairCause.MISSED_CREATE);
        assertThat(FirstInstruction.cause(null, false, true, true, false)).isEqualTo(LateRepairCause.NO_OVERLAY);
    }
}
