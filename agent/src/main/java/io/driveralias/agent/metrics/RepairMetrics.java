package io.driveralias.agent.metrics;

import io.driveralias.agent.core.ContainerOutcome;
import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.core.FailureReason;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;

/**
 * What the agent reports about its work. The core talks to this interface only; the
 * Micrometer/Prometheus implementation lives in {@code MicrometerRepairMetrics} and overrides
 * every method; the defaults report nothing ({@link #NOOP}, test doubles). Names and
 * labels: docs/monitoring.md.
 */
public interface RepairMetrics {

    /** {@code driver_alias_containers_total{outcome}}. */
    default void containerExamined(ContainerOutcome outcome) {
    }

    /** {@code driver_alias_links_created_total{library}}; {@code library} is the alias name. */
    default void linkCreated(String library) {
    }

    /** {@code driver_alias_links_replaced_total{library}}. */
    default void linkReplaced(String library) {
    }

    /** {@code driver_alias_repair_failures_total{reason}}. */
    default void repairFailed(FailureReason reason) {
    }

    /**
     * The container is running, in scope, and still missing an alias: sets
     * {@code driver_alias_container_unrepaired{namespace,pod,container,container_id,reason}} to 1
     * (idempotent; a new reason replaces the container's series, never adds one) and keeps
     * {@code driver_alias_unrepaired_containers} equal to the number of such series.
     *
     * @param reasons why it failed, in the report's order; the label is {@link #mainReason}'s pick
     */
    default void unrepaired(ContainerRef container, Collection<FailureReason> reasons) {
    }

    /** {@code driver_alias_resync_interval_seconds}: the configured {@code --resync-interval}. */
    default void resyncInterval(Duration interval) {
    }

    /**
     * The one reason an unrepaired container's series carries: the first in this order. What the
     * image's or pod's owner must fix comes first (conflict, read_only, unsafe_path, too_large), then what the node's
     * operator must (permission, io, docker_error, runtime_error), then container_gone, which fixes itself.
     * A failure with no reason recorded counts as {@code io}.
     */
    static FailureReason mainReason(Collection<FailureReason> reasons) {
        for (FailureReason candidate : REASON_PRECEDENCE) {
            if (reasons.contains(candidate)) {
                return candidate;
            }
        }
        return FailureReason.IO;
    }

    /** {@link #mainReason}'s order; every reason appears once. */
    List<FailureReason> REASON_PRECEDENCE = List.of(FailureReason.CONFLICT, FailureReason.READ_ONLY,
            FailureReason.UNSAFE_PATH, FailureReason.TOO_LARGE, FailureReason.PERMISSION, FailureReason.IO, FailureReason.DOCKER_ERROR,
            FailureReason.RUNTIME_ERROR, FailureReason.CONTAINER_GONE);

    /** The container was fixed: its unrepaired series disappears. */
    default void resolved(String containerId) {
    }

    /** The container ended or is gone: every series of its own disappears (unrepaired, driver mismatch). */
    default void gone(String containerId) {
        resolved(containerId);
        driverMatched(containerId);
    }

    /**
     * {@code driver_alias_repaired_after_start_total{cause}}: a GPU container was repaired after its
     * first instruction, not before it, because of {@code cause}.
     */
    default void repairedAfterStart(io.driveralias.agent.core.LateRepairCause cause) {
    }

    /** {@code driver_alias_repair_duration_seconds}: event received to aliases verified. */
    default void repairDuration(Duration duration) {
    }

    /** {@code driver_alias_exposure_seconds}: container start to aliases verified (0 if before start). */
    default void exposure(Duration duration) {
    }

    /**
     * {@code driver_alias_runtime_up{runtime}}: 1 while the runtime's event stream is connected
     * and it answers; for Docker also {@code driver_alias_docker_up}. {@code runtime} is docker,
     * containerd, or nri (the agent's connection to containerd as its NRI plugin).
     */
    default void runtimeConnected(String runtime, boolean up) {
    }

    /**
     * {@code driver_alias_runtime_events_total{runtime,action}} ({@code action} is the runtime's
     * own name for the event); for Docker also {@code driver_alias_docker_events_total{action}}.
     */
    default void runtimeEvent(String runtime, String action) {
    }

    /**
     * {@code driver_alias_own_pod_visible}: in a pod, 1 once a watched runtime runs the agent's own
     * pod, 0 while none does (the node's containers run in a runtime the agent does not watch).
     */
    default void ownPodVisible(boolean visible) {
    }

    /**
     * {@code driver_alias_host_driver_files}: how many of the driver's files the agent finds on the
     * host, asked at each scrape ({@code found}); {@code driver_alias_unmatched_driver_files_total}:
     * driver-named files met in containers that are none of them ({@code unmatched}). Together they
     * say "GPU containers run, and the agent can repair none of them" (DriverAliasNoHostDriver).
     */
    default void hostDriverFiles(IntSupplier found, LongSupplier unmatched) {
    }

    /**
     * {@code driver_alias_host_driver_state{state,module_version,library_version}}: 1, one series,
     * replaced when the node's driver changes (the kernel module against the host's user-space files).
     */
    default void hostDriverState(io.driveralias.agent.core.HostDriverState state) {
    }

    /**
     * {@code driver_alias_container_driver_total{loads}}: a GPU container examined, by what its loader
     * takes of the driver ({@link io.driveralias.agent.core.DriverLoad.Verdict}), once per start.
     */
    default void containerDriver(io.driveralias.agent.core.DriverLoad.Verdict loads) {
    }

    /**
     * The container will load a driver library that does not match the node's kernel module: sets
     * {@code driver_alias_container_driver_mismatch{namespace,pod,container,container_id,loads,library,version}}
     * to 1 (one series per container, replaced when what it loads changes). {@link #driverMatched}
     * and {@link #resolved} take it away.
     */
    default void driverMismatch(ContainerRef container, io.driveralias.agent.core.DriverLoad load) {
    }

    /** The container loads a driver that matches (or is looked at no more): its mismatch series goes. */
    default void driverMatched(String containerId) {
    }

    /** {@code driver_alias_reconcile_last_success_timestamp_seconds}. */
    default void reconcileSucceeded(Instant at) {
    }

    /** {@code driver_alias_build_info{version,driver_version}}: the series follows the driver version. */
    default void driverVersion(String driverVersion) {
    }

    /** {@code driver_alias_kubernetes_events_total{result}}: result is sent, dropped or failed. */
    default void kubernetesEvent(String result) {
    }

    /**
     * {@code driver_alias_queue_refused_total}: containers the full work queue could not take;
     * the next reconcile finds them again, so this counts delays, not losses.
     */
    default void queueRefused(int containers) {
    }

    /** Reports nothing: for the one-shot commands, and a base for test doubles. */
    RepairMetrics NOOP = new RepairMetrics() {
    };
}
