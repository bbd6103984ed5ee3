package io.driveralias.agent.bench;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** Percentiles of a sample, nearest-rank, in the sample's unit. */
record Stats(int count, double p50, double p95, double p99, double max) {

    static Stats of(List<Double> values) {
        if (values.isEmpty()) {
            return new Stats(0, Double.NaN, Double.NaN, Double.NaN, Double.NaN);
        }
        List<Double> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        return new Stats(sorted.size(), rank(sorted, 50), rank(sorted, 95), rank(sorted, 99), sorted.getLast());
    }

    private static double rank(List<Double> sorted, int percentile) {
        int index = (int) Math.ceil(percentile / 100.0 * sorted.size()) - 1;
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, index)));
    }

    String row(String unit) {
        return count == 0 ? "n/a" : String.format("p50 %.1f, p95 %.1f, p99 %.1f, max %.1f %s (n=%d)",
                p50, p95, p99, max, unit, count);
    }
}
