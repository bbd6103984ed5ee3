package io.driveralias.agent.bench;

import java.util.Map;

/** What the benchmark runs the workload against: the agent, the floor loop or the shell loop. */
interface Subject extends AutoCloseable {

    String name();

    /** Starts it and waits until it serves; returns milliseconds from launch to ready. */
    long start();

    /** Repair durations reported by the subject itself, by container id (milliseconds). */
    Map<String, Double> repairMillis();

    /** User + system CPU seconds used so far by the subject's processes. */
    double cpuSeconds();

    /** The same by thread (names with their numbers dropped, e.g. "repair-"); empty where unknown. */
    default Map<String, Double> threadCpuSeconds() {
        return Map.of();
    }

    /** Bytes its JVM has allocated so far; NaN where it is not measured. */
    default double allocatedBytes() {
        return Double.NaN;
    }

    /** Resident memory now and at its peak (MiB); NaN where it means nothing. */
    double rssMiB();

    double peakRssMiB();

    @Override
    void close();
}
