package io.driveralias.agent.kube;

import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.core.DriverLoad;
import io.driveralias.agent.repair.RepairReport;

/**
 * Tells a pod's owners what the agent did to their container, as Kubernetes Events.
 * Implementations must return at once: a slow or dead API server never delays a repair.
 * Containers without a pod are ignored.
 */
public interface PodEvents extends AutoCloseable {

    /** Links were created or replaced (Normal, DriverAliasesRepaired). */
    void repaired(ContainerRef container, RepairReport report);

    /** The container stays unrepaired (Warning, DriverAliasRepairFailed). */
    void failed(ContainerRef container, RepairReport report);

    /**
     * What the container's loader takes of the driver, where that is news for its owner: a library
     * that does not match the node's kernel module (Warning, DriverAliasDriverMismatch), or CUDA's
     * forward-compatibility libraries in use (Normal, DriverAliasForwardCompatibility).
     */
    default void driverLoad(ContainerRef container, DriverLoad load) {
    }

    @Override
    void close();

    PodEvents NOOP = new PodEvents() {
        @Override
        public void repaired(ContainerRef container, RepairReport report) {
        }

        @Override
        public void failed(ContainerRef container, RepairReport report) {
        }

        @Override
        public void close() {
        }
    };
}
