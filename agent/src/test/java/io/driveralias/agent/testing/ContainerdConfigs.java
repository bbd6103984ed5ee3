package io.driveralias.agent.testing;

import java.nio.file.Path;

/**
 * The private containerd's configuration for each release ({@link ContainerdVersion}): the same
 * instance on all three (own root, state, sockets and runc root under {@code dir}; the CRI plugin
 * with a local sandbox image, no CNI, handlers {@code runc} and {@code nvidia}; an oom_score_adj no
 * lower than containerd's own, which a CI container without CAP_SYS_RESOURCE needs), written in
 * each release's format, and NRI on where the release has it, on a socket of its own.
 */
final class ContainerdConfigs {

    private ContainerdConfigs() {
    }

    /**
     * @param dir      the instance's directory
     * @param pause    the sandbox image
     * @param launcher the nvidia handler's BinaryName
     */
    /** The annotation by which a pod tolerates a required NRI plugin's absence, on releases with NRI's validator. */
    public static final String TOLERATE_MISSING_PLUGINS = "tolerate-missing-plugins.driver-alias.test";

    static String toml(ContainerdVersion version, Path dir, String pause, Path launcher) {
        String common = """
                root = "%1$s/root"
                state = "%1$s/state"
                [grpc]
                  address = "%1$s/containerd.sock"
                [ttrpc]
                  address = "%1$s/containerd.sock.ttrpc"
                [debug]
                  address = "%1$s/debug.sock"
                [plugins."io.containerd.internal.v1.opt"]
                  path = "%1$s/opt"
                """;
        String nri = """
                [plugins."io.containerd.nri.v1.nri"]
                  disable = false
                  disable_connections = false
                  socket_path = "%1$s/nri/nri.sock"
                  plugin_path = "%1$s/nri/plugins"
                  plugin_config_path = "%1$s/nri/conf.d"
                  plugin_registration_timeout = "5s"
                  plugin_request_timeout = "2s"
                """;
        String body = switch (version) {
            case V1_6 -> "version = 2\n" + common + cri2();
            case V1_7 -> "version = 2\n" + common + cri2() + nri;
            case V2_1 -> "version = 3\n" + common + cri3() + nri;
            // NRI 0.10+'s validator on, nothing required of every pod: a pod asks for the agent by annotation.
            case V2_3 -> "version = 3\n" + common + cri3() + nri + """
                    [plugins."io.containerd.nri.v1.nri".default_validator]
                      enable = true
                      tolerate_missing_plugins_annotation = "%4$s"
                    """;
        };
        return body.formatted(dir, pause, launcher, TOLERATE_MISSING_PLUGINS);
    }

    /** The CRI plugin in config version 2 (1.6, 1.7): one section with the images, runtimes and CNI under it. */
    private static String cri2() {
        return """
                [plugins."io.containerd.grpc.v1.cri"]
                  sandbox_image = "%2$s"
                  stream_server_port = "0"
                  # The sandbox asks for oom_score_adj -998; in a machine without CAP_SYS_RESOURCE (a CI
                  # container) runc may not lower it: keep it no lower than containerd's own.
                  restrict_oom_score_adj = true
                  [plugins."io.containerd.grpc.v1.cri".cni]
                    bin_dir = "%1$s/cni/bin"
                    conf_dir = "%1$s/cni/conf"
                  [plugins."io.containerd.grpc.v1.cri".containerd]
                    snapshotter = "overlayfs"
                    default_runtime_name = "runc"
                    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
                      runtime_type = "io.containerd.runc.v2"
                      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
                        Root = "%1$s/runc"
                    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
                      runtime_type = "io.containerd.runc.v2"
                      # containerd 1.6 passes a container's annotations to its OCI spec only where the
                      # handler lists them; a GPU node with CDI annotations lists cdi.k8s.io/*.
                      container_annotations = ["cdi.k8s.io/*"]
                      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
                        BinaryName = "%3$s"
                        Root = "%1$s/runc"
                """;
    }

    /**
     * The CRI in config version 3 (2.x), split in three: images (the sandbox image pinned, the
     * snapshotter), runtime (handlers, CNI, CDI), and the gRPC service (no TCP, the stream server).
     */
    private static String cri3() {
        return """
                [plugins."io.containerd.cri.v1.images"]
                  snapshotter = "overlayfs"
                  [plugins."io.containerd.cri.v1.images".pinned_images]
                    sandbox = "%2$s"
                [plugins."io.containerd.cri.v1.runtime"]
                  restrict_oom_score_adj = true
                  # CDI specs of this instance only, not the host's /etc/cdi.
                  cdi_spec_dirs = ["%1$s/cdi"]
                  [plugins."io.containerd.cri.v1.runtime".cni]
                    bin_dirs = ["%1$s/cni/bin"]
                    conf_dir = "%1$s/cni/conf"
                  [plugins."io.containerd.cri.v1.runtime".containerd]
                    default_runtime_name = "runc"
                    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
                      runtime_type = "io.containerd.runc.v2"
                      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
                        Root = "%1$s/runc"
                    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]
                      runtime_type = "io.containerd.runc.v2"
                      container_annotations = ["cdi.k8s.io/*"]
                      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia.options]
                        BinaryName = "%3$s"
                        Root = "%1$s/runc"
                [plugins."io.containerd.grpc.v1.cri"]
                  disable_tcp_service = true
                  stream_server_address = "127.0.0.1"
                  stream_server_port = "0"
                """;
    }
}
