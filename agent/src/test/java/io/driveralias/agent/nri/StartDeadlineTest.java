package io.driveralias.agent.nri;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class StartDeadlineTest {

    @ParameterizedTest(name = "budget {0} ms, runtime timeout {1} ms, caller timeout {2} ms -> {3} ms")
    @CsvSource({
        // the budget, well inside the default 2 s
        "500, 2000, 0, 500",
        "500, 2000, 2000, 500",
        // half the runtime's timeout when that is shorter
        "500, 600, 0, 300",
        "5000, 2000, 0, 1000",
        // half the caller's own deadline when that is shorter still
        "500, 2000, 400, 200",
        // no timeout from the runtime: NRI's default of 2 s
        "5000, 0, 0, 1000",
        "5000, -5, 0, 1000",
    })
    void theEarliestOfBudgetHalfTheRuntimeTimeoutAndHalfTheCallers(long budgetMs, long runtimeMs, long callerMs, long expectMs) {
        StartDeadline deadline = new StartDeadline(Duration.ofMillis(budgetMs));
        assertThat(deadline.nanos(Duration.ofMillis(runtimeMs), Duration.ofMillis(callerMs).toNanos()))
                .isEqualTo(Duration.ofMillis(expectMs).toNanos());
    }

    @ParameterizedTest
    @CsvSource({"0", "-1"})
    void aBudgetMustBePositive(long ms) {
        assertThatThrownBy(() -> new StartDeadline(Duration.ofMillis(ms))).isInstanceOf(IllegalArgumentException.class);
    }
}
