package io.driveralias.agent.core;

/**
 * Why a container could not be repaired. The label values are a contract (metrics, alerts,
 * dashboards): add to this set only with a reason.
 */
public enum FailureReason {
    /** A path led out of the root, through a magic link, across a mount, or into a loop. */
    UNSAFE_PATH("unsafe_path"),
    /** A regular file, directory or special file holds an alias name. */
    CONFLICT("conflict"),
    /** The container's root filesystem (or the library directory) is read-only. */
    READ_ONLY("read_only"),
    PERMISSION("permission"),
    /** The container exited (or its process was replaced) during the repair. */
    CONTAINER_GONE("container_gone"),
    /** Docker's API did not answer an examination, a few tries in a row, while Docker was up. */
    DOCKER_ERROR("docker_error"),
    /** The same of containerd's API (or any runtime but Docker). */
    RUNTIME_ERROR("runtime_error"),
    IO("io"),
    /**
     * The runtime's description of the container holds more of what the agent keeps (bind
     * mounts, CRI and CDI annotations, NVIDIA variables) than its bounds: refused, not held.
     */
    TOO_LARGE("too_large");

    private final String label;

    FailureReason(String label) {
        this.label = label;
    }

    public String label() {
        return label;
    }
}
