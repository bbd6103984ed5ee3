package io.driveralias.agent.core;

/** How the examination of one container ended: the {@code outcome} label of the metrics. */
public enum ContainerOutcome {
    /** Aliases were created or replaced, and verified. */
    REPAIRED("repaired"),
    /** Every alias was already right. */
    HEALTHY("healthy"),
    /** No driver files: not a GPU container. */
    NO_DRIVER("no_driver"),
    /** Out of scope: a pod sandbox, or an image excluded by the globs. */
    EXCLUDED("excluded"),
    /** Some alias is still missing or wrong; see the failure reason. */
    FAILED("failed"),
    /** The container exited before (or while) it was examined. */
    GONE("gone"),
    /**
     * A GPU container that exited before its aliases could be verified: it ran without them.
     * Counted apart from {@link #GONE} (and with reason {@code container_gone}), and said.
     */
    MISSED("missed");

    private final String label;

    ContainerOutcome(String label) {
        this.label = label;
    }

    public String label() {
        return label;
    }
}
