package io.driveralias.agent.metrics;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.config.NamingConvention;

/**
 * Micrometer's Prometheus naming, except that a name ending in {@code .created} keeps that
 * word. The Prometheus client strips {@code _created} (like {@code _total}) from every name,
 * since OpenMetrics writes a counter's start time as {@code <name>_created}; that would turn
 * {@code driver.alias.links.created} into {@code driver_alias_links_total} instead of the
 * {@code driver_alias_links_created_total} docs/monitoring.md promises. The counter's own samples
 * ({@code _total}, and {@code _created_created} if start times were on) stay unambiguous.
 */
final class CreatedSuffixNaming implements NamingConvention {

    private final NamingConvention prometheus;

    CreatedSuffixNaming(NamingConvention prometheus) {
        this.prometheus = prometheus;
    }

    @Override
    public String name(String name, Meter.Type type, String baseUnit) {
        String conventional = prometheus.name(name, type, baseUnit);
        String plain = name.replace('.', '_');
        return plain.equals(conventional + "_created") ? plain : conventional;
    }

    @Override
    public String tagKey(String key) {
        return prometheus.tagKey(key);
    }

    @Override
    public String tagValue(String value) {
        return prometheus.tagValue(value);
    }
}
