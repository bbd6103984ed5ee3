package io.driveralias.agent.metrics;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/** The metrics docs/monitoring.md promises, with their {@code # TYPE} as the Prometheus text format declares them. */
public final class DesignMetrics {

    public static final Map<String, String> TYPES;

    static {
        Map<String, String> types = new LinkedHashMap<>();
        types.put("driver_alias_containers_total", "counter");
        types.put("driver_alias_links_created_total", "counter");
        types.put("driver_alias_links_replaced_total", "counter");
        types.put("driver_alias_repair_failures_total", "counter");
        types.put("driver_alias_unrepaired_containers", "gauge");
        types.put("driver_alias_container_unrepaired", "gauge");
        types.put("driver_alias_repair_duration_seconds", "histogram");
        types.put("driver_alias_exposure_seconds", "histogram");
        types.put("driver_alias_docker_up", "gauge");
        types.put("driver_alias_docker_events_total", "counter");
        types.put("driver_alias_reconcile_last_success_timestamp_seconds", "gauge");
        types.put("driver_alias_build_info", "gauge");
        types.put("driver_alias_kubernetes_events_total", "counter");
        types.put("driver_alias_resync_interval_seconds", "gauge");
        TYPES = Collections.unmodifiableMap(types);
    }

    private DesignMetrics() {
    }
}
