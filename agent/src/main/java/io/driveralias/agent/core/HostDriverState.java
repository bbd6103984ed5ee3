package io.driveralias.agent.core;

import java.util.Collection;
import java.util.Optional;

/**
 * The node's driver as the kernel and the host's files tell it: the loaded kernel module's
 * version against the versions of the driver's user-space files on the host. After the driver's
 * packages are upgraded and the module is not reloaded, every new GPU container on the node fails
 * ("Failed to initialize NVML: Driver/library version mismatch"), nvidia-smi, dcgm-exporter and
 * the device plugin included: that is {@link State#MISMATCH}. No module at all (a driver still
 * being installed, a driver container that has not loaded it yet) is its own state, not a
 * mismatch. The {@code state} label of {@code driver_alias_host_driver_state}.
 *
 * @param moduleVersion  the kernel module's version, if one is loaded
 * @param libraryVersion the host's user-space driver version: the module's where the host has its
 *                       files, else the newest the host has
 */
public record HostDriverState(State state, Optional<String> moduleVersion, Optional<String> libraryVersion) {

    public enum State {
        /** The host has the user-space files of the loaded module's version. */
        MATCH("match"),
        /** The host's user-space files are of another version than the loaded module. */
        MISMATCH("mismatch"),
        /** No NVIDIA kernel module is loaded. */
        NO_MODULE("no_module"),
        /** A module is loaded, and the agent finds none of the driver's files on the host. */
        NO_LIBRARIES("no_libraries");

        private final String label;

        State(String label) {
            this.label = label;
        }

        public String label() {
            return label;
        }
    }

    /** Before the agent has looked. */
    public static final HostDriverState UNKNOWN = new HostDriverState(State.NO_MODULE, Optional.empty(), Optional.empty());

    /**
     * @param module           the loaded kernel module's version, if any
     * @param libraryVersions  the versions of the driver's user-space files the host has (those of
     *                         {@code libcuda} and {@code libnvidia-ml}, or the version most of its files share)
     */
    public static HostDriverState of(Optional<String> module, Collection<String> libraryVersions) {
        Optional<String> newest = libraryVersions.stream().max(DriverVersions::compareVersions);
        if (module.isEmpty()) {
            return new HostDriverState(State.NO_MODULE, module, newest);
        }
        if (libraryVersions.isEmpty()) {
            return new HostDriverState(State.NO_LIBRARIES, module, Optional.empty());
        }
        if (libraryVersions.contains(module.get())) {
            return new HostDriverState(State.MATCH, module, module);
        }
        return new HostDriverState(State.MISMATCH, module, newest);
    }

    /**
     * The version a GPU container's driver must have to work on this node: the module's; with no
     * module to ask, the host's files' where they are all of one version. Of several (two drivers
     * side by side, a driver being installed), which one a container needs is not known, so none is
     * named: a container is then never told its node's files mismatch.
     */
    public Optional<String> reference(Collection<String> libraryVersions) {
        if (moduleVersion.isPresent()) {
            return moduleVersion;
        }
        return libraryVersions.size() == 1 ? libraryVersion : Optional.empty();
    }

    /** For log lines and {@code check}: what the state means, with both versions. */
    public String describe() {
        String module = moduleVersion.orElse("?");
        String libraries = libraryVersion.orElse("?");
        return switch (state) {
            case MATCH -> "the NVIDIA kernel module and the host's driver libraries are both " + module;
            case MISMATCH -> "the NVIDIA kernel module is " + module + " but the host's driver libraries are " + libraries
                    + ": every new GPU container on this node fails (\"Failed to initialize NVML: Driver/library version"
                    + " mismatch\", nvidia-smi included) until the module is reloaded or the node rebooted (drain it first)";
            case NO_MODULE -> "no NVIDIA kernel module is loaded (no /proc/driver/nvidia/version)"
                    + libraryVersion.map(v -> "; the host's driver libraries are " + v).orElse("")
                    + ": a driver still being installed, or a GPU the driver has not bound";
            case NO_LIBRARIES -> "the NVIDIA kernel module is " + module + ", and none of the driver's libraries are found"
                    + " on the host";
        };
    }
}
