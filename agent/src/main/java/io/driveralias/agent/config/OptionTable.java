package io.driveralias.agent.config;

import io.driveralias.agent.config.ConfigParser.Option;
import java.util.List;
import java.util.Optional;

/**
 * The agent's options: each one's name, default and help, in the order {@code --help} lists them,
 * and that help. Apart from {@link ConfigParser} because this is what operators read and what
 * the manifests and docs are checked against, while the parser is what a value has to pass;
 * a new option is one line here, and its checks there.
 */
final class OptionTable {

    static final List<Option> ALL = List.of(
            new Option("docker-host", "unix:///var/run/docker.sock", false, false,
                    "Docker endpoint (DOCKER_HOST is honoured too)"),
            new Option("listen", "0.0.0.0:9470", false, false, "address for /metrics, /healthz, /readyz"),
            new Option("web-config-file", null, false, false,
                    "TLS and basic auth for --listen, in the Prometheus exporter-toolkit format (default: plain HTTP)"),
            new Option("include-image", null, true, false, "only containers whose image matches a glob"),
            new Option("exclude-image", null, true, false, "skip containers whose image matches a glob"),
            new Option("lib-dir", null, true, false, "extra library directory to scan (added to the defaults)"),
            new Option("host-lib-dir", null, true, false,
                    "extra host directory holding the driver's files (added to the defaults): only the host's own"
                            + " driver files are aliased in containers"),
            new Option("driver-version", null, false, false, "driver version to repair (default: detect)"),
            new Option("dev-links", "false", false, true, "also create libX.so -> SONAME development links"),
            new Option("before-start", "true", false, true,
                    "write a created GPU container's aliases before it starts (false: only started containers)"),
            new Option("ldconfig", "cache", false, false,
                    "cache: add the aliases to the container's ld.so.cache, written by the agent (nothing runs"
                            + " in the container); off"),
            new Option("resync-interval", "60s", false, false, "period of the full reconcile"),
            new Option("dry-run", "false", false, true, "print what would be done, change nothing"),
            new Option("json", "false", false, true, "machine-readable output for check and repair"),
            new Option("kubernetes", "auto", false, false, "auto|on|off: Kubernetes Events on the pod"),
            new Option("node-name", null, false, false, "this node's name (default: $NODE_NAME)"),
            new Option("pod-uid", null, false, false, "the agent's own pod's uid (default: $POD_UID; the DaemonSet"
                    + " sets it): ready only once a watched runtime runs the pod"),
            new Option("log-format", "text", false, false, "text|json"),
            new Option("log-level", "info", false, false, "error|warn|info|debug|trace"),
            new Option("host-proc", "/proc", false, false, "where the host's processes are visible"),
            new Option("root", null, false, false, "check or repair an unpacked root filesystem instead of containers"),
            new Option("resolver", "auto", false, false, "auto|walk: force the pre-openat2 path walk (tests)"),
            new Option("workers", "8", false, false, "repair workers"),
            new Option("shutdown-grace", "10s", false, false, "how long SIGTERM waits for repairs in flight"),
            new Option("docker-api-version", null, false, false,
                    "Docker API version to use, e.g. 1.24 (default: negotiate with the daemon)"),
            new Option("gpu-runtime", "nvidia", true, false,
                    "an OCI runtime that adds the driver's files when NVIDIA_VISIBLE_DEVICES asks (default: nvidia)"),
            new Option("runtime", "auto", true, false,
                    "auto|docker|containerd|nri: the container runtimes to watch (auto: each whose socket exists;"
                            + " nri: containerd, and repair inside its starts as its NRI plugin)"),
            new Option("nri-socket", "/var/run/nri/nri.sock", false, false,
                    "the runtime's NRI socket (containerd 1.7 with NRI on, 2.x): auto serves it where it exists"),
            new Option("nri-deadline", "500ms", false, false,
                    "the longest the agent holds a container's start inside the runtime (at most half the runtime's timeout)"),
            new Option("containerd-address", "unix:///run/containerd/containerd.sock", false, false,
                    "containerd's socket (CONTAINERD_ADDRESS is honoured too)"),
            new Option("containerd-namespace", "k8s.io", false, false,
                    "the containerd namespace to watch (k8s.io: the kubelet's; never moby, Docker's own)"),
            new Option("containerd-state", "/run/containerd", false, false,
                    "containerd's state directory, where it mounts a container's root"),
            new Option("docker-containerd-address", "auto", false, false,
                    "auto|off|unix:///path: the containerd Docker runs its containers on, read in Docker's namespace"
                            + " for Docker's containers (auto: where Docker says, else beside Docker's socket)"));

    private OptionTable() {
    }

    static Optional<Option> find(String name) {
        return ALL.stream().filter(o -> o.name().equals(name)).findFirst();
    }

    /** An option the parser itself names: always in the table. */
    static Option option(String name) {
        return find(name).orElseThrow();
    }

    /** The option table as help text: the lines {@code --help} prints. */
    static String usage() {
        StringBuilder b = new StringBuilder("""
                usage: driver-alias-agent run [options]
                       driver-alias-agent check [ID...] [--json]
                       driver-alias-agent repair [ID...] [--dry-run] [--json]
                       driver-alias-agent repair --root DIR [--dry-run] [--json] [--driver-version V] [--lib-dir D]... [--dev-links]
                       driver-alias-agent check --root DIR [--json] [--driver-version V] [--lib-dir D]... [--dev-links]
                       driver-alias-agent --version | --help

                options (each also as DRIVER_ALIAS_<OPTION>; flag > environment > default):
                """);
        for (Option o : ALL) {
            String left = "  --" + o.name() + (o.flag() ? "" : " VALUE") + (o.repeatable() ? " (repeatable)" : "");
            b.append(String.format("%-40s %s%s%n", left, o.help(),
                    o.defaultValue() == null ? "" : " [" + o.defaultValue() + "]"));
        }
        b.append("\nexit codes: 0 all healthy, 1 some unrepaired, 2 usage or configuration error, 3 cannot reach a watched"
                + " runtime (Docker, containerd)\n");
        return b.toString();
    }
}
