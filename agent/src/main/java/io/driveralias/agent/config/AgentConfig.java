package io.driveralias.agent.config;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * Everything the agent is told, validated. Built once at startup by {@link ConfigParser}
 * (flag > environment > default); tests build it from literal maps.
 */
public record AgentConfig(
        Command command,
        List<String> containerIds,
        Optional<String> root,
        boolean dryRun,
        boolean json,
        String dockerHost,
        String listenHost,
        int listenPort,
        List<String> includeImages,
        List<String> excludeImages,
        List<String> libraryDirectories,
        Optional<String> driverVersion,
        boolean devLinks,
        LdconfigMode ldconfig,
        Duration resyncInterval,
        KubernetesMode kubernetes,
        Optional<String> nodeName,
        LogFormat logFormat,
        LogLevel logLevel,
        String hostProc,
        boolean forceWalkResolver,
        int workers,
        Duration shutdownGrace,
        /** A Docker API version to speak instead of negotiating one (old daemons, tests). */
        Optional<String> dockerApiVersion,
        /** OCI runtimes that add the driver's files when the environment asks ({@code NVIDIA_VISIBLE_DEVICES}). */
        List<String> gpuRuntimes,
        /** Repair created containers before they start; false: started containers only. */
        boolean beforeStart,
        /** Where the host keeps the driver's files: the only files the agent aliases in a container. */
        List<String> hostLibraryDirectories,
        /** TLS and basic authentication for the metrics port, in the Prometheus exporter-toolkit format. */
        Optional<String> webConfigFile,
        /** The runtimes asked for ({@code --runtime}): auto, docker, containerd; {@link RuntimeChoice} resolves them. */
        List<String> runtimes,
        /** containerd's socket, {@code unix:///run/containerd/containerd.sock}. */
        String containerdAddress,
        /** The containerd namespace watched ({@code k8s.io}, the CRI's); never {@code moby}. */
        String containerdNamespace,
        /** containerd's state directory, where it mounts a task's root. */
        String containerdState,
        /**
         * The uid of the agent's own pod (the DaemonSet gives it from metadata.uid): the agent is ready
         * only once a watched runtime runs it; empty outside Kubernetes.
         */
        Optional<String> podUid,
        /**
         * The containerd Docker runs its containers on ({@code unix:///path}), {@code auto} (where Docker
         * says, else beside Docker's socket) or {@code off}: read in Docker's namespace only, for
         * Docker's containers (their process's creation, and their layers in containerd's image store).
         */
        String dockerContainerdAddress,
        /** The runtime's NRI socket: where the agent serves containerd's starts as an NRI plugin. */
        String nriSocket,
        /** The longest the agent holds a start inside the runtime (NRI): past it, the container starts, repaired after. */
        Duration nriDeadline) {

    /** Where the NVIDIA runtimes put driver files (docs/design.md); {@code --lib-dir} adds more. */
    public static final List<String> DEFAULT_LIBRARY_DIRECTORIES = List.of(
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/usr/lib64",
            "/usr/local/nvidia/lib64");

    /**
     * Where hosts keep the driver's user-space files (each with its {@code nvidia/*} subdirectories,
     * as Debian installs them): distributions' library directories, GKE's install directory, and
     * the NVIDIA GPU Operator's driver container root; {@code --host-lib-dir} adds more.
     */
    public static final List<String> DEFAULT_HOST_LIBRARY_DIRECTORIES = List.of(
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/usr/lib64",
            "/usr/lib",
            "/usr/local/nvidia/lib64",
            "/home/kubernetes/bin/nvidia/lib64",
            "/run/nvidia/driver/usr/lib/x86_64-linux-gnu",
            "/run/nvidia/driver/usr/lib/aarch64-linux-gnu",
            "/run/nvidia/driver/usr/lib64");

    public enum Command { RUN, CHECK, REPAIR }

    public enum LdconfigMode { CACHE, OFF }

    public enum KubernetesMode { AUTO, ON, OFF }

    public enum LogFormat { TEXT, JSON }

    /** The agent's own log threshold; libraries stay at WARN whatever it is (logback.xml). */
    public enum LogLevel { ERROR, WARN, INFO, DEBUG, TRACE }

    public AgentConfig {
        containerIds = List.copyOf(containerIds);
        includeImages = List.copyOf(includeImages);
        excludeImages = List.copyOf(excludeImages);
        libraryDirectories = List.copyOf(libraryDirectories);
        gpuRuntimes = List.copyOf(gpuRuntimes);
        hostLibraryDirectories = List.copyOf(hostLibraryDirectories);
        runtimes = List.copyOf(runtimes);
    }
}
