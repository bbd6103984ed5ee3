package io.driveralias.agent.docker;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.fs.ProcessStartTime;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** One start of a Docker container, one instant: its process's, however the agent came to it. */
class ProcessStartsTest {

    private static final Instant NOW = Instant.parse("2026-11-30T10:00:00Z");
    private static final String ID = "4f1b3c9d2a7e8f60b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2";

    @TempDir
    Path proc;
    private ProcessStarts starts;

    @BeforeEach
    void setUp() throws IOException {
        // Booted 1000 s ago; process 4242 made 990.50 s after boot (starttime 99050 ticks).
        Files.writeString(proc.resolve("uptime"), "1000.00 1500.00\n");
        Files.createDirectories(proc.resolve("4242"));
        Files.writeString(proc.resolve("4242/stat"), "4242 (runc:[2:INIT]) S 4230 4242 4242 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0"
                + " 99050 1000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n");
        starts = new ProcessStarts(new ProcessStartTime(proc.toString(), Clock.fixed(NOW, ZoneOffset.UTC)));
    }

    @Test
    void aProcessStartsWhenItsKernelSaysAndAContainerThatExitedKeepsThatStart() {
        Instant made = NOW.minusMillis(9_500);

        assertThat(starts.ofProcess(ID, 4242)).contains(made);
        // Docker 28 stamps StartedAt 60 ms before the process is made; Docker 20.10 80 ms after it ran.
        assertThat(starts.ofEnded(ID, made.minusMillis(60))).contains(made);
        assertThat(starts.ofEnded(ID, made.plusMillis(80))).contains(made);
    }

    @Test
    void aStartFarFromTheProcessSeenIsAnotherOne() {
        starts.ofProcess(ID, 4242);

        assertThat(starts.ofEnded(ID, NOW.plusSeconds(30))).isEmpty();
        assertThat(starts.ofEnded("another", NOW.minusMillis(9_500))).isEmpty();
    }

    @Test
    void aProcessThisHostDoesNotShowHasNoStartHere() {
        assertThat(starts.ofProcess(ID, 777)).isEmpty();
        assertThat(starts.ofEnded(ID, NOW)).isEmpty();
    }
}
