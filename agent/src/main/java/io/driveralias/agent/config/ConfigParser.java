package io.driveralias.agent.config;

import io.driveralias.agent.config.AgentConfig.Command;
import io.driveralias.agent.config.AgentConfig.KubernetesMode;
import io.driveralias.agent.config.AgentConfig.LdconfigMode;
import io.driveralias.agent.config.AgentConfig.LogFormat;
import io.driveralias.agent.config.AgentConfig.LogLevel;
import io.driveralias.agent.core.DockerApiVersions;
import java.time.Duration;
import java.util.ArrayList;
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

    /** Every option, in the order --help lists them ({@link OptionTable}). */
    public static final List<Option> OPTIONS = OptionTable.ALL;

    private static final Pattern DURATION = Pattern.compile("(\\d+)(ms|s|m|h)?");
    private static final Pattern VERSION = Pattern.compile("[0-9]+(\\.[0-9]+)+");
    private static final Pattern RUNTIME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.-]{0,127}");

    private ConfigParser() {
    }

    public static AgentConfig parse(List<String> args, Map<String, String> env) throws ConfigException {
        OptionValues v = OptionValues.read(args, env);
        List<String> positional = v.positional();
        if (positional.isEmpty()) {
            throw new ConfigException("no command: use run, check or repair (--help for more)");
        }
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
            gpuRuntimes = List.of(OptionTable.option("gpu-runtime").defaultValue());
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
        String dockerHost = dockerHost(givenDockerHost.orElse(OptionTable.option("docker-host").defaultValue()));
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
                RuntimeChoice.containerdAddress(givenContainerd.orElse(OptionTable.option("containerd-address").defaultValue())),
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
    private static Optional<String> podUid(OptionValues v, Map<String, String> env) throws ConfigException {
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
        return OptionTable.usage();
    }
}
