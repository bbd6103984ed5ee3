package io.driveralias.agent.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class HostDriverStateTest {

    @Test
    void theModuleAgainstTheHostsFiles() {
        assertThat(HostDriverState.of(Optional.of("535.104.05"), List.of("535.104.05")))
                .isEqualTo(new HostDriverState(HostDriverState.State.MATCH, Optional.of("535.104.05"), Optional.of("535.104.05")));
        assertThat(HostDriverState.of(Optional.of("535.104.05"), List.of("535.183.01", "470.57.02")))
                .isEqualTo(new HostDriverState(HostDriverState.State.MISMATCH, Optional.of("535.104.05"),
                        Optional.of("535.183.01")));
        assertThat(HostDriverState.of(Optional.of("535.104.05"), List.of("470.57.02", "535.104.05")).state())
                .as("two drivers side by side, one of them the module's").isEqualTo(HostDriverState.State.MATCH);
    }

    @Test
    void noModuleIsItsOwnStateNotAMismatch() {
        HostDriverState installing = HostDriverState.of(Optional.empty(), List.of("535.104.05"));

        assertThat(installing.state()).isEqualTo(HostDriverState.State.NO_MODULE);
        assertThat(installing.reference(List.of("535.104.05"))).as("judged against the host's files then").contains("535.104.05");
        assertThat(HostDriverState.of(Optional.empty(), List.of("535.104.05", "535.183.01")).reference(List.of("535.104.05",
                "535.183.01"))).as("of two versions and no module, which one a container needs is not known").isEmpty();
        assertThat(installing.describe()).contains("no NVIDIA kernel module is loaded");
        assertThat(HostDriverState.of(Optional.empty(), List.of()).state()).isEqualTo(HostDriverState.State.NO_MODULE);
        assertThat(HostDriverState.of(Optional.of("535.104.05"), List.of()).state())
                .isEqualTo(HostDriverState.State.NO_LIBRARIES);
    }

    @Test
    void aMismatchSaysBothVersionsAndWhatToDo() {
        String text = HostDriverState.of(Optional.of("535.104.05"), List.of("535.183.01")).describe();

        assertThat(text).contains("kernel module is 535.104.05", "libraries are 535.183.01",
                "Driver/library version mismatch", "reloaded or the node rebooted (drain it first)");
        assertThat(HostDriverState.of(Optional.of("535.104.05"), List.of("535.183.01")).reference(List.of("535.183.01")))
                .contains("535.104.05");
    }
}
