package io.driveralias.agent.config;

import io.driveralias.agent.config.AgentConfig.Command;
import io.driveralias.agent.config.AgentConfig.KubernetesMode;
import io.driveralias.agent.config.AgentConfig.LdconfigMode;
import io.driveralias.agent.config.AgentConfig.LogFormat;
import io.driveralias.agent.config.AgentConfig.LogLevel;
import io.driveralias.agent.core.DockerApiVersions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Builds {@link AgentConfig} from the command line and the environment. Every option
 * {@code --some-option} has the variable {@code DRIVER_ALIAS_SOME_OPTION}; a flag wins over
 * the variable, the variable over the default. Repeatable options take a comma-separated
 * list in the environment.
 */
public final class ConfigParser {

    /** Name, default (null: none), whether it repeats, whether it is a boolean switch, help. */
    public record Option(String name, String defaultValue, boolean repeatable, boolean flag, String help) {
        public String environmentVariable() {
            return "DRIVER_ALIAS_" + name.toUpperCase(Locale.ROOT).replace('-', '_');
        }
    }

    public static final List<Option> OPTIONS = List.of(
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
            new Option("workers", "4", false, false, "repair workers"),
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

    private static final Pattern DURATION = Pattern.compile("(\\d+)(ms|s|m|h)?");
    private static final Pattern VERSION = Pattern.compile("[0-9]+(\\.[0-9]+)+");
    private static final Pattern RUNTIME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.-]{0,127}");

    private ConfigParser() {
    }

    public static AgentConfig parse(List<String> args, Map<String, String> env) throws ConfigException {
        Map<String, List<String>> flags = new LinkedHashMap<>();
        List<String> positional = new ArrayList<>();
        for (int i = 0; i < args.size(); i++) {
            String arg = args.get(i);
            if (!arg.startsWith("--")) {
                positional.add(arg);
                continue;
            }
            String name = arg.substring(2);
            String value = null;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            }
            String given = name;
            Option option = find(name).orElseThrow(
                    () -> new ConfigException("unknown option --" + given + " (--help lists them)"));
            if (value == null) {
                if (option.flag()) {
                    value = "true";
                } else if (i + 1 < args.size()) {
                    value = args.get(++i);
                } else {
                    throw new ConfigException("--" + name + " needs a value");
                }
            }
            List<String> values = flags.computeIfAbsent(name, k -> new ArrayList<>());
            if (!values.isEmpty() && !option.repeatable()) {
                throw new ConfigException("--" + name + " given twice");
            }
            values.add(value);
        }
        if (positional.isEmpty()) {
            throw new ConfigException("no command: use run, check or repair (--help for more)");
        }
        Values v = new Values(flags, env);
        Command command = parseEnum(Command.class, "command", positional.getFirst());
        List<String> ids = positional.subList(1, positional.size());
        Optional<String> root = v.optional("root");
        if (root.isPresent() && (command == Command.RUN || !ids.isEmpty())) {
            throw new ConfigException("--root goes with 'check' or 'repair' and no container ids");
        }
        if (command == Command.RUN && !ids.isEmpty()) {
            throw new ConfigException("'run' takes no container ids");
        }
        String[] listen = hostPort(v.single("listen"));
        Optional<String> version = v.optional("driver-version");
        if (version.isPresent() && !VERSION.matcher(version.get()).matches()) {
            throw new ConfigException("--driver-version must look like 535.104.05, got " + version.get());
        }
        List<String> libDirs = new ArrayList<>(AgentConfig.DEFAULT_LIBRARY_DIRECTORIES);
        for (String dir : v.list("lib-dir")) {
            if (!dir.startsWith("/")) {
                throw new ConfigException("--lib-dir must be an absolute path inside the container: " + dir);
            }
            if (!libDirs.contains(dir)) {
                libDirs.add(dir);
            }
        }
        List<String> hostLibDirs = new ArrayList<>(AgentConfig.DEFAULT_HOST_LIBRARY_DIRECTORIES);
        for (String dir : v.list("host-lib-dir")) {
            if (!dir.startsWith("/") || dir.contains("/../") || dir.endsWith("/..")) {
                throw new ConfigException("--host-lib-dir must be an absolute path on the host: " + dir);
            }
            if (!hostLibDirs.contains(dir)) {
                hostLibDirs.add(dir);
            }
        }
        List<String> gpuRuntimes = v.list("gpu-runtime");
        if (gpuRuntimes.isEmpty()) {
            gpuRuntimes = List.of(option("gpu-runtime").defaultValue());
        }
        for (String runtime : gpuRuntimes) {
            if (!RUNTIME.matcher(runtime).matches()) {
                throw new ConfigException("--gpu-runtime must be a runtime name as Docker knows it, got " + runtime);
            }
        }
        String resolver = v.single("resolver");
        if (!resolver.equals("auto") && !resolver.equals("walk")) {
            throw new ConfigException("--resolver is auto or walk, got " + resolver);
        }
        int workers = integer("workers", v.single("workers"), 1, 16);
        Optional<String> apiVersion = v.optional("docker-api-version");
        if (apiVersion.isPresent() && !DockerApiVersions.isSupported(apiVersion.get())) {
            throw new ConfigException("--docker-api-version must be " + DockerApiVersions.OLDEST_SUPPORTED + " to "
                    + DockerApiVersions.NEWEST_KNOWN + ", got " + apiVersion.get());
        }
        Duration resync = duration("resync-interval", v.single("resync-interval"), Duration.ofSeconds(1));
        Optional<String> givenDockerHost = v.explicit("docker-host")
                .or(() -> Optional.ofNullable(env.get("DOCKER_HOST")).filter(h -> !h.isBlank()));
        String dockerHost = dockerHost(givenDockerHost.orElse(option("docker-host").defaultValue()));
        Optional<String> givenContainerd = v.explicit("containerd-address")
                .or(() -> Optional.ofNullable(env.get("CONTAINERD_ADDRESS")).filter(a -> !a.isBlank()).map(String::trim));
        if (v.single("ldconfig").equalsIgnoreCase("exec")) {
            // Removed: it ran the container's own ldconfig as root, which hands root to any
            // container user who can put an ldconfig in the container's PATH.
            throw new ConfigException("--ldconfig exec is no longer supported (it ran a program from the container"
                    + " as root); use cache (the default) or off");
        }
        return new AgentConfig(command, ids, root, v.bool("dry-run"), v.bool("json"), dockerHost,
                listen[0], integer("listen port", listen[1], 0, 65535),
                v.list("include-image"), v.list("exclude-image"), libDirs, version, v.bool("dev-links"),
                parseEnum(LdconfigMode.class, "ldconfig", v.single("ldconfig")),
                resync,
                parseEnum(KubernetesMode.class, "kubernetes", v.single("kubernetes")),
                v.optional("node-name").or(() -> Optional.ofNullable(env.get("NODE_NAME")).filter(s -> !s.isBlank())),
                parseEnum(LogFormat.class, "log-format", v.single("log-format")),
                parseEnum(LogLevel.class, "log-level", v.single("log-level")),
                v.single("host-proc"), resolver.equals("walk"), workers,
                duration("shutdown-grace", v.single("shutdown-grace")), apiVersion, gpuRuntimes, v.bool("before-start"),
                hostLibDirs, v.optional("web-config-file"),
                RuntimeChoice.parse(v.list("runtime"), givenDockerHost.isPresent(), givenContainerd.isPresent()),
                RuntimeChoice.containerdAddress(givenContainerd.orElse(option("containerd-address").defaultValue())),
                RuntimeChoice.containerdNamespace(v.single("containerd-namespace")),
                RuntimeChoice.containerdState(v.single("containerd-state")), podUid(v, env),
                RuntimeChoice.dockerContainerd(v.single("docker-containerd-address")),
                RuntimeChoice.socketFile("--nri-socket", v.single("nri-socket")), nriDeadline(v.single("nri-deadline")));
    }

    /** Between a millisecond and NRI's own default request timeout (2 s), which a longer one would overrun. */
    private static Duration nriDeadline(String value) throws ConfigException {
        Duration d = duration("nri-deadline", value);
        if (d.compareTo(Duration.ofMillis(1)) < 0 || d.compareTo(Duration.ofSeconds(2)) >= 0) {
            throw new ConfigException("--nri-deadline must be at least 1ms and under 2s (NRI's request timeout), got " + value);
        }
        return d;
    }

    private static final Pattern POD_UID = Pattern.compile(
            "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");

    /** A pod's uid is a UUID: anything else would end up in a runtime's label filter. */
    private static Optional<String> podUid(Values v, Map<String, String> env) throws ConfigException {
        Optional<String> uid = v.optional("pod-uid").or(() -> Optional.ofNullable(env.get("POD_UID")).filter(s -> !s.isBlank()))
                .map(String::trim);
        if (uid.isPresent() && !POD_UID.matcher(uid.get()).matches()) {
            throw new ConfigException("--pod-uid must be a pod's uid (a UUID, as metadata.uid), got " + uid.get());
        }
        return uid;
    }

    /**
     * {@code unix:///absolute/path} or {@code tcp://host:port}: anything else would fail
     * later, deep in the HTTP client, with an error that names neither the option nor the fix.
     */
    static String dockerHost(String value) throws ConfigException {
        java.net.URI uri;
        try {
            uri = new java.net.URI(value);
        } catch (java.net.URISyntaxException e) {
            throw new ConfigException("--docker-host is not a URI: " + value + " (e.g. unix:///var/run/docker.sock)");
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme();
        boolean ok = switch (scheme) {
            case "unix" -> uri.getPath() != null && uri.getPath().startsWith("/") && uri.getPath().length() > 1
                    && uri.getRawAuthority() == null;
            case "tcp" -> uri.getHost() != null && uri.getPort() > 0 && uri.getPort() <= 65535
                    && (uri.getPath() == null || uri.getPath().isEmpty());
            default -> false;
        };
        if (!ok) {
            throw new ConfigException("--docker-host must be unix:///path/to/docker.sock or tcp://host:port, got "
                    + value);
        }
        return value;
    }

    /** Flag, then environment, then default, for one option. */
    private record Values(Map<String, List<String>> flags, Map<String, String> env) {

        Optional<String> optional(String name) {
            return explicit(name).or(() -> Optional.ofNullable(option(name).defaultValue()));
        }

        /** Flag or environment, without the default. */
        Optional<String> explicit(String name) {
            List<String> given = flags.get(name);
            if (given != null) {
                return Optional.of(given.getFirst());
            }
            String fromEnv = env.get(option(name).environmentVariable());
            return fromEnv == null || fromEnv.isBlank() ? Optional.empty() : Optional.of(fromEnv.trim());
        }

        String single(String name) {
            return optional(name).orElseThrow();
        }

        List<String> list(String name) {
            List<String> given = flags.get(name);
            if (given != null) {
                return List.copyOf(given);
            }
            String fromEnv = env.get(option(name).environmentVariable());
            if (fromEnv == null || fromEnv.isBlank()) {
                return List.of();
            }
            return List.of(fromEnv.trim().split("\\s*,\\s*"));
        }

        boolean bool(String name) throws ConfigException {
            String value = single(name).toLowerCase(Locale.ROOT);
            return switch (value) {
                case "true", "1", "yes", "on" -> true;
                case "false", "0", "no", "off" -> false;
                default -> throw new ConfigException("--" + name + " is true or false, got " + value);
            };
        }
    }

    private static Optional<Option> find(String name) {
        return OPTIONS.stream().filter(o -> o.name().equals(name)).findFirst();
    }

    /** An option the parser itself names: always in the table. */
    private static Option option(String name) {
        return find(name).orElseThrow();
    }

    private static <E extends Enum<E>> E parseEnum(Class<E> type, String what, String value) throws ConfigException {
        try {
            return Enum.valueOf(type, value.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            List<String> allowed = new ArrayList<>();
            for (E constant : type.getEnumConstants()) {
                allowed.add(constant.name().toLowerCase(Locale.ROOT));
            }
            throw new ConfigException(what + " must be one of " + allowed + ", got '" + value + "'");
        }
    }

    /** A duration of at least {@code minimum}; the message's examples are all allowed ones. */
    static Duration duration(String what, String value, Duration minimum) throws ConfigException {
        String rule = "--" + what + " is a duration of at least " + minimum.toSeconds() + "s, like 30s, 5m or 1h, got "
                + value;
        Duration d;
        try {
            d = duration(what, value);
        } catch (ConfigException e) {
            throw new ConfigException(rule);
        }
        if (d.compareTo(minimum) < 0) {
            throw new ConfigException(rule);
        }
        return d;
    }

    static Duration duration(String what, String value) throws ConfigException {
        Matcher m = DURATION.matcher(value.trim());
        if (!m.matches()) {
            throw new ConfigException("--" + what + " is a duration like 500ms, 60s, 5m or 1h, got " + value);
        }
        long n = Long.parseLong(m.group(1));
        String unit = m.group(2) == null ? "s" : m.group(2);
        return switch (unit) {
            case "ms" -> Duration.ofMillis(n);
            case "m" -> Duration.ofMinutes(n);
            case "h" -> Duration.ofHours(n);
            default -> Duration.ofSeconds(n);
        };
    }

    private static int integer(String what, String value, int min, int max) throws ConfigException {
        try {
            int n = Integer.parseInt(value.trim());
            if (n < min || n > max) {
                throw new ConfigException(what + " must be between " + min + " and " + max + ", got " + n);
            }
            return n;
        } catch (NumberFormatException e) {
            throw new ConfigException(what + " must be a number, got " + value);
        }
    }

    private static String[] hostPort(String listen) throws ConfigException {
        int colon = listen.lastIndexOf(':');
        if (colon < 0) {
            throw new ConfigException("--listen is host:port, got " + listen);
        }
        String host = listen.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        return new String[] {host.isEmpty() ? "0.0.0.0" : host, listen.substring(colon + 1)};
    }

    /** The build's version ({@link BuildVersion}). */
    public static String version() {
        return BuildVersion.get();
    }

    /** The option table as help text. */
    public static String usage() {
        StringBuilder b = new StringBuilder("""
                usage: driver-alias-agent run [options]
                       driver-alias-agent check [ID...] [--json]
                       driver-alias-agent repair [ID...] [--dry-run] [--json]
                       driver-alias-agent repair --root DIR [--dry-run] [--json] [--driver-version V] [--lib-dir D]... [--dev-links]
                       driver-alias-agent check --root DIR [--json] [--driver-version V] [--lib-dir D]... [--dev-links]
                       driver-alias-agent --version | --help

                options (each also as DRIVER_ALIAS_<OPTION>; flag > environment > default):
                """);
        for (Option o : OPTIONS) {
            String left = "  --" + o.name() + (o.flag() ? "" : " VALUE") + (o.repeatable() ? " (repeatable)" : "");
            b.append(String.format("%-40s %s%s%n", left, o.help(),
                    o.defaultValue() == null ? "" : " [" + o.defaultValue() + "]"));
        }
        b.append("\nexit codes: 0 all healthy, 1 some unrepaired, 2 usage or configuration error, 3 cannot reach a watched"
                + " runtime (Docker, containerd)\n");
        return b.toString();
    }
}
