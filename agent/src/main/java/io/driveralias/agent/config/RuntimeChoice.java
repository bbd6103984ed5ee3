package io.driveralias.agent.config;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Predicate;
import java.util.regex.Pattern;

/**
 * Which container runtimes the agent watches ({@code --runtime}, repeatable): {@code docker},
 * {@code containerd}, or {@code auto}, every runtime whose socket exists on this node (both
 * where both do: a node migrating from Docker, Docker beside a kubelet on containerd); where no
 * socket exists, those whose address was given (so that a wrong address fails loudly). A runtime
 * named is watched even while its socket is missing: the agent then says so and is not ready,
 * rather than quietly watching nothing. The DaemonSet gives both addresses: on each node, auto
 * watches what is there. Where auto finds neither containerd's socket nor a containerd named, but
 * an NRI socket (CRI-O, whose NRI is on by default from 1.30), the runtime is served through NRI
 * alone ({@link #nriAlone}).
 */
public final class RuntimeChoice {

    /**
     * A runtime the agent has an adapter for; NRI: the runtime's starts, served as its plugin (with
     * containerd where containerd is watched, alone otherwise).
     */
    public enum Kind { DOCKER, CONTAINERD, NRI }

    /** containerd's identifiers (namespaces): alphanumerics with single '.', '_' or '-' between, at most 76. */
    private static final Pattern NAMESPACE = Pattern.compile("[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)*");
    /** Docker's own namespace in containerd: its containers are Docker's to report. */
    static final String DOCKER_NAMESPACE = "moby";

    private RuntimeChoice() {
    }

    /** With {@code auto}: this runtime's address was given, and it is watched if no socket exists. */
    private static final String GIVEN = "auto:";

    /**
     * The values of {@code --runtime}, each checked: auto, docker or containerd. With auto, a
     * runtime whose address was given ({@code --docker-host}, {@code DOCKER_HOST},
     * {@code --containerd-address}, {@code CONTAINERD_ADDRESS}) is noted ({@code auto:docker}):
     * {@link #resolve} watches it where auto finds no socket at all.
     */
    static List<String> parse(List<String> given, boolean dockerAddressGiven, boolean containerdAddressGiven)
            throws ConfigException {
        List<String> runtimes = new ArrayList<>();
        for (String value : given.isEmpty() ? List.of("auto") : given) {
            String runtime = value.trim().toLowerCase(Locale.ROOT);
            if (!List.of("auto", "docker", "containerd", "nri").contains(runtime)) {
                throw new ConfigException("--runtime is auto, docker, containerd or nri, got '" + value + "'");
            }
            if (!runtimes.contains(runtime)) {
                runtimes.add(runtime);
            }
        }
        if (runtimes.contains("auto") && dockerAddressGiven) {
            runtimes.add(GIVEN + "docker");
        }
        if (runtimes.contains("auto") && containerdAddressGiven) {
            runtimes.add(GIVEN + "containerd");
        }
        return List.copyOf(runtimes);
    }

    /**
     * The runtimes to watch, Docker first: those named, and for {@code auto} those whose socket
     * exists ({@code exists} asks the filesystem). A Docker endpoint over TCP cannot be looked
     * for and counts as there.
     *
     * @throws ConfigException when {@code auto} alone finds no runtime: what was looked for, where
     */
    public static List<Kind> resolve(AgentConfig config, Predicate<String> exists) throws ConfigException {
        boolean auto = config.runtimes().contains("auto");
        String dockerSocket = socketPath(config.dockerHost());
        String containerdSocket = socketPath(config.containerdAddress());
        List<Kind> kinds = new ArrayList<>();
        if (config.runtimes().contains("docker") || auto && (dockerSocket.isEmpty() || exists.test(dockerSocket))) {
            kinds.add(Kind.DOCKER);
        }
        boolean nri = config.runtimes().contains("nri");
        if (config.runtimes().contains("containerd") || nri || auto && exists.test(containerdSocket)) {
            kinds.add(Kind.CONTAINERD);
        }
        // NRI serves containerd's starts: named, or, with auto, where its socket exists: beside containerd where it is
        // watched, alone where it is not (CRI-O).
        if (nri || auto && exists.test(config.nriSocket())) {
            kinds.add(Kind.NRI);
        }
        if (kinds.isEmpty() && auto) {
            // No socket at all: the addresses given are tried, and fail loudly (exit 3, not ready).
            if (config.runtimes().contains(GIVEN + "docker")) {
                kinds.add(Kind.DOCKER);
            }
            if (config.runtimes().contains(GIVEN + "containerd")) {
                kinds.add(Kind.CONTAINERD);
            }
        }
        if (kinds.isEmpty()) {
            throw new ConfigException("--runtime auto found no container runtime on this node: no Docker socket at "
                    + dockerSocket + " (--docker-host) and no containerd socket at " + containerdSocket
                    + " (--containerd-address); name the runtime with --runtime docker or --runtime containerd");
        }
        return List.copyOf(kinds);
    }

    /** NRI without containerd's API: the runtime (CRI-O) known only through what its NRI calls tell. */
    public static boolean nriAlone(List<Kind> kinds) {
        return kinds.contains(Kind.NRI) && !kinds.contains(Kind.CONTAINERD);
    }

    /** An absolute path to a socket file. */
    static String socketFile(String option, String value) throws ConfigException {
        if (!value.startsWith("/") || value.length() < 2 || value.contains("\0")) {
            throw new ConfigException(option + " is an absolute path to a socket, got " + value);
        }
        return value;
    }

    /** {@code auto}, {@code off}, or a containerd socket as {@code --containerd-address} takes it. */
    static String dockerContainerd(String value) throws ConfigException {
        if (value.equals("auto") || value.equals("off")) {
            return value;
        }
        String address = value.startsWith("/") ? "unix://" + value : value;
        if (!address.startsWith("unix:///") || address.length() <= "unix:///".length() || address.contains("/../")
                || address.endsWith("/..")) {
            throw new ConfigException("--docker-containerd-address is auto, off or unix:///path/to/containerd.sock, got " + value);
        }
        return address;
    }

    /** The path of a {@code unix://} endpoint; empty for another scheme (Docker over TCP). */
    static String socketPath(String endpoint) {
        return endpoint.startsWith("unix://") ? URI.create(endpoint).getPath() : "";
    }

    /**
     * {@code unix:///path/containerd.sock}, or the bare path as {@code ctr}'s CONTAINERD_ADDRESS
     * has it; returned as {@code unix:///path}.
     */
    static String containerdAddress(String value) throws ConfigException {
        String address = value.startsWith("/") ? "unix://" + value : value;
        URI uri;
        try {
            uri = new URI(address);
        } catch (java.net.URISyntaxException e) {
            throw new ConfigException("--containerd-address is unix:///path/to/containerd.sock, got " + value);
        }
        if (!"unix".equals(uri.getScheme()) || uri.getRawAuthority() != null || uri.getPath() == null
                || !uri.getPath().startsWith("/") || uri.getPath().length() < 2) {
            throw new ConfigException("--containerd-address is unix:///path/to/containerd.sock, got " + value);
        }
        return address;
    }

    static String containerdNamespace(String value) throws ConfigException {
        if (value.equals(DOCKER_NAMESPACE)) {
            throw new ConfigException("--containerd-namespace moby is Docker's own namespace: its containers are Docker's,"
                    + " watched with --runtime docker");
        }
        if (value.length() > 76 || !NAMESPACE.matcher(value).matches()) {
            throw new ConfigException("--containerd-namespace must be a containerd namespace such as k8s.io, got " + value);
        }
        return value;
    }

    static String containerdState(String value) throws ConfigException {
        if (!value.startsWith("/") || value.contains("/../") || value.endsWith("/..")) {
            throw new ConfigException("--containerd-state must be an absolute path (containerd's state directory), got " + value);
        }
        return value.length() > 1 && value.endsWith("/") ? value.substring(0, value.length() - 1) : value;
    }
}
