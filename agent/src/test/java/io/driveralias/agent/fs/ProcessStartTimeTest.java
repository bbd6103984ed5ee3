package io.driveralias.agent.fs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ProcessStartTimeTest {

    private static String stat(String comm, long startTicks) {
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
        // priority nice threads itrealvalue starttime vsize ...
        return "4242 (" + comm + ") S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 " + startTicks
                + " 1024 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n";
    }

    @Test
    void theStartFieldComesAfterTheNameWhateverTheNameHolds() {
        assertThat(ProcessStartTime.startTicks(stat("sleep", 123456))).isEqualTo(123456);
        assertThat(ProcessStartTime.startTicks(stat("a) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 999 (", 77))).isEqualTo(77);
        assertThat(ProcessStartTime.startTicks(stat(" ", 5))).isEqualTo(5);
    }

    @Test
    void brokenStatLinesAreRefused() {
        assertThatThrownBy(() -> ProcessStartTime.startTicks("")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> ProcessStartTime.startTicks("1 (x) S 1 2")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> ProcessStartTime.startTicks(stat("x", 1).replace(" 1 1024 ", " -1 1024 ")))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> ProcessStartTime.startTicks(stat("x", 1).replace(" 1 1024 ", " x 1024 ")))
                .isInstanceOf(IllegalArgumentException.class);
    }

    /**
     * Found in CI: a container that exited at once was looked at after its mounts were gone but
     * before its runtime reaped it (signal 0 still reached it), and the runtime's empty placeholders
     * were judged the image's own driver. Exiting is its state (Z, X) or PF_EXITING in its flags.
     */
    @Test
    void aZombieOrAProcessInItsExitIsExiting() {
        assertThat(ProcessStartTime.isExiting("77 (sh) S 1 77 77 0 -1 4194560 120 0 0 0")).isFalse();
        assertThat(ProcessStartTime.isExiting("77 (sh) R 1 77 77 0 -1 4194564 120 0 0 0")).as("PF_EXITING").isTrue();
        assertThat(ProcessStartTime.isExiting("77 (sh) Z 1 77 77 0 -1 4227084 120 0 0 0")).isTrue();
        assertThat(ProcessStartTime.isExiting("77 (a) Z 1 (b) S 1 77 77 0 -1 4194560")).as("a name holding ') Z'").isFalse();
        assertThat(ProcessStartTime.isExiting("77 (sh) X")).isTrue();
        assertThat(ProcessStartTime.isExiting("77 (sh) S 1 2 3 0")).as("too short for flags: its state").isFalse();
        assertThat(ProcessStartTime.isExiting("77 (sh) S 1 2 3 0 -1 notanumber")).isFalse();
        assertThat(ProcessStartTime.isExiting("")).isFalse();
    }

    @Test
    void uptimeToTheHundredth() {
        assertThat(ProcessStartTime.uptime("12345.67 2345.89\n")).isEqualTo(Duration.ofMillis(12_345_670));
        assertThat(ProcessStartTime.uptime("5")).isEqualTo(Duration.ofSeconds(5));
        assertThatThrownBy(() -> ProcessStartTime.uptime("-5.00 1")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> ProcessStartTime.uptime("5.x0 1")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aProcessStartIsBootPlusItsTicksAndTheSameEveryTime(@TempDir Path proc) throws IOException {
        Files.writeString(proc.resolve("uptime"), "1000.50 10.00\n");
        Files.createDirectories(proc.resolve("4242"));
        Files.writeString(proc.resolve("4242/stat"), stat("cuda app", 90_025));
        Instant now = Instant.parse("2026-12-01T10:00:00Z");
        ProcessStartTime times = new ProcessStartTime(proc.toString(), Clock.fixed(now, ZoneOffset.UTC));
        Instant boot = now.minusMillis(1_000_500);
        assertThat(times.of(4242)).contains(boot.plusMillis(900_250));
        Files.writeString(proc.resolve("uptime"), "2000.00 10.00\n");
        assertThat(times.of(4242)).as("the boot instant is taken once").contains(boot.plusMillis(900_250));
        assertThat(times.of(4243)).isEmpty();
        assertThat(times.of(0)).isEmpty();
        assertThat(times.of(-1)).isEmpty();
    }

    /** A clock that moves 3 ms at each reading, and takes 5 ms to answer: the boot instant differs with the moment it is taken. */
    private static final class MovingClock extends Clock {
        private final java.util.concurrent.atomic.AtomicReference<Instant> now =
                new java.util.concurrent.atomic.AtomicReference<>(Instant.parse("2026-12-01T10:00:00Z"));

        @Override
        public Instant instant() {
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return now.getAndUpdate(t -> t.plusMillis(3));
        }

        @Override
        public java.time.ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(java.time.ZoneId zone) {
            throw new UnsupportedOperationException();
        }
    }

    private static Path procWithOneProcess(Path proc) throws IOException {
        Files.writeString(proc.resolve("uptime"), "1000.50 10.00\n");
        Files.createDirectories(proc.resolve("4242"));
        Files.writeString(proc.resolve("4242/stat"), stat("cuda app", 90_025));
        return proc;
    }

    /**
     * The agent has several readers of one procfs (the NRI path's, containerd's, Docker's), and a
     * start is known by its exact instant: each must date a process as the others do, whenever it
     * first read the boot instant, or one start would be examined and counted twice.
     */
    @Test
    void twoReadersOfOneProcfsDateAProcessAlike(@TempDir Path dir) throws IOException {
        Path proc = procWithOneProcess(dir);
        Clock clock = new MovingClock();
        Instant first = new ProcessStartTime(proc.toString(), clock).of(4242).orElseThrow();
        Instant second = new ProcessStartTime(proc.toString(), clock).of(4242).orElseThrow();
        assertThat(second).isEqualTo(first);
    }

    /** Workers that date their first processes at the same moment (the first reconcile) agree too. */
    @Test
    void workersRacingAtTheFirstReadingDateAProcessAlike(@TempDir Path dir) throws Exception {
        Path proc = procWithOneProcess(dir);
        ProcessStartTime times = new ProcessStartTime(proc.toString(), new MovingClock());
        java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.ExecutorService workers = java.util.concurrent.Executors.newFixedThreadPool(8);
        try {
            java.util.List<java.util.concurrent.Future<Instant>> dated = new java.util.ArrayList<>();
            for (int i = 0; i < 8; i++) {
                dated.add(workers.submit(() -> {
                    go.await();
                    return times.of(4242).orElseThrow();
                }));
            }
            go.countDown();
            java.util.Set<Instant> instants = new java.util.HashSet<>();
            for (java.util.concurrent.Future<Instant> f : dated) {
                instants.add(f.get(10, java.util.concurrent.TimeUnit.SECONDS));
            }
            assertThat(instants).hasSize(1);
        } finally {
            workers.shutdownNow();
        }
    }

    /** The kernel's start of this JVM precedes the JVM's own record of its start by the time the JVM takes to boot. */
    @Test
    void thisProcessStartedJustBeforeTheJvmSaysItDid() {
        long pid = ProcessHandle.current().pid();
        Instant started = new ProcessStartTime("/proc", Clock.systemUTC()).of((int) pid).orElseThrow();
        Instant jvm = Instant.ofEpochMilli(java.lang.management.ManagementFactory.getRuntimeMXBean().getStartTime());
        assertThat(started).isBefore(jvm.plusMillis(20));
        assertThat(Duration.between(started, jvm)).isLessThan(Duration.ofSeconds(5));
    }
}
