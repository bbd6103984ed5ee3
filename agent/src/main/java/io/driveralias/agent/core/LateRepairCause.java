package io.driveralias.agent.core;

/**
 * Why a GPU container was repaired after its first instruction instead of before it: the
 * {@code cause} label of {@code driver_alias_repaired_after_start_total}, and the sentence the
 * agent logs (once per cause) to say what an operator can do about it.
 */
public enum LateRepairCause {
    DISABLED("disabled", "--before-start=false: containers are repaired only once started"),
    NO_OVERLAY("no_overlay", "the runtime's storage has no overlay layers the agent can write into before a start"
            + " (vfs, devicemapper, btrfs, zfs; Podman's overlay; Docker's containerd image store where the agent does not"
            + " reach Docker's containerd: --docker-containerd-address)"),
    RUNTIME_FILES_UNKNOWN("runtime_files_unknown", "the GPU runtime adds the driver's files, and no container"
            + " started since the agent did has shown which yet"),
    MOUNT_TIMEOUT("mount_timeout", "the container started before its aliases could be written: its root was not"
            + " mounted in time (a busy node), or not as its own overlay"),
    UNREADABLE("unreadable", "the runtime's files of a created container (its layers, its configuration) could not"
            + " be read: check that the agent has the runtime's directories mounted (docs/privileges.md)"),
    PERMISSION("permission", "the kernel refused the agent a write into the container's layers (a missing"
            + " capability: docs/privileges.md)"),
    KERNEL("kernel", "the kernel lacks a system call the early path needs"),
    LAYERS("layers", "the image's layers are not what the early path writes over (a symlinked library directory,"
            + " a layer removed meanwhile)"),
    MISSED_CREATE("missed_create", "the agent had not handled the container's creation when it started (the agent"
            + " or its runtime restarted, its queue was full, or the start followed the create before the agent had"
            + " described it)"),
    INCOMPLETE("incomplete", "some aliases were written before the start, and the start path added the rest"),
    NRI_TIMEOUT("nri_timeout", "the runtime's NRI call was answered at the agent's deadline, before the repair inside"
            + " the container's start was done (a busy node, or a slow root filesystem)"),
    SLOW_CREATE("slow_create", "the agent handled the container's creation, but its process existed before the aliases"
            + " were written and had begun its program when they were verified (a busy node, or a start that followed"
            + " the create within milliseconds)");

    private final String label;
    private final String explanation;

    LateRepairCause(String label, String explanation) {
        this.label = label;
        this.explanation = explanation;
    }

    public String label() {
        return label;
    }

    public String explanation() {
        return explanation;
    }
}
