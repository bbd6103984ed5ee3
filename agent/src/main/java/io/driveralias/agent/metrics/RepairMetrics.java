package io.driveralias.agent.metrics;

import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.core.FailureReason;
import java.time.Duration;
import java.time.Instant;

/**
 * What the agent reports about its work. The core talks to this interface only; the
 * Micrometer/Prometheus implementation lives in {@code MicrometerRepairMetrics}, and
 * {@link #NOOP} serves commands that expose no metrics. Names and labels: DESIGN.md.
 */
public interface RepairMetrics {

    /** {@code driver_alias_containers_total{outcome}}. */
    void containerExamined(ContainerOutcome outcome);

    /** {@code driver_alias_links_created_total{library}}; {@code library} is the alias name. */
    void linkCreated(String library);

    /** {@code driver_alias_links_replaced_total{library}}. */
    void linkReplaced(String library);

    /** {@code driver_alias_repair_failures_total{reason}}. */
    void repairFailed(FailureReason reason);

    /**
     * The container is running, in scope, and still missing an alias: sets
     * {@code driver_alias_container_unrepaired{...}} to 1 (idempotent) and keeps
     * {@code driver_alias_unrepaired_containers} equal to the number of such series.
     */
    void unrepaired(ContainerRef container);

    /** The container was fixed, or is gone: its unrepaired series disappears. */
    void resolved(String containerId);

    /** {@code driver_alias_repair_duration_seconds}: event received to aliases verified. */
    void repairDuration(Duration duration);

    /** {@code driver_alias_exposure_seconds}: container start to aliases verified (0 if before start). */
    void exposure(Duration duration);

    /** {@code driver_alias_docker_up}. */
    void dockerConnected(boolean up);

    /** {@code driver_alias_docker_events_total{action}}. */
    void dockerEvent(String action);

    /** {@code driver_alias_reconcile_last_success_timestamp_seconds}. */
    void reconcileSucceeded(Instant at);

    /** {@code driver_alias_build_info{version,driver_version}}: the series follows the driver version. */
    void driverVersion(String driverVersion);

    /** {@code driver_alias_kubernetes_events_total{result}}: result is sent, dropped or failed. */
    void kubernetesEvent(String result);

    RepairMetrics NOOP = new RepairMetrics() {
        @Override
        public void containerExamined(ContainerOutcome outcome) {
        }

        @Override
        public void linkCreated(String library) {
        }

        @Override
        public void linkReplaced(String library) {
        }

        @Override
        public void repairFailed(FailureReason reason) {
        }

        @Override
        public void unrepaired(ContainerRef container) {
        }

        @Override
        public void resolved(String containerId) {
        }

        @Override
        public void repairDuration(Duration duration) {
        }

        @Override
        public void exposure(Duration duration) {
        }

        @Override
        public void dockerConnected(boolean up) {
        }

        @Override
        public void dockerEvent(String action) {
        }

        @Override
        public void reconcileSucceeded(Instant at) {
        }

        @Override
        public void driverVersion(String driverVersion) {
        }

        @Override
        public void kubernetesEvent(String result) {
        }
    };
}
