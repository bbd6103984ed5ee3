package io.driveralias.agent.docker;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.model.Container;
import com.github.dockerjava.api.model.Event;
import com.github.dockerjava.api.model.EventType;
import com.github.dockerjava.core.DefaultDockerClientConfig;
import com.github.dockerjava.core.DockerClientImpl;
import com.github.dockerjava.transport.DockerHttpClient;
import com.github.dockerjava.zerodep.ZerodepDockerHttpClient;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The agent's one door to Docker: docker-java over the zerodep transport for events and
 * lists, and raw requests on the same transport for what docker-java's model drops (the
 * overlay2 paths of inspect). The API version is negotiated with the daemon at every
 * (re)connect: the older of the daemon's and {@link #NEWEST_KNOWN}, down to 1.24 (Docker 1.12);
 * or fixed by the operator ({@code --docker-api-version}), which the daemon then has to accept.
 */
public final class DockerApi implements AutoCloseable {

    public static final String NEWEST_KNOWN = "1.43";
    public static final String OLDEST_SUPPORTED = "1.24";
    /** Inspect output carries user-chosen labels and env: bounded. */
    private static final int MAX_RESPONSE = 8 << 20;
    private static final Pattern CONTAINER_REF = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.-]{0,254}");
    private static final ObjectMapper JSON = new ObjectMapper();
    static final Duration PING_TIMEOUT = Duration.ofSeconds(2);

    private final String host;
    private final DockerHttpClient http;
    private final DockerHttpClient streamHttp;
    private final Optional<String> forcedVersion;
    private volatile Clients clients;

    private record Clients(String version, DockerClient requests, DockerClient stream) {
    }

    private DockerApi(String host, DockerHttpClient http, DockerHttpClient streamHttp, Optional<String> forcedVersion) {
        this.host = host;
        this.http = http;
        this.streamHttp = streamHttp;
        this.forcedVersion = forcedVersion;
    }

    public static DockerApi create(String dockerHost) {
        return create(dockerHost, Optional.empty());
    }

    /** {@code apiVersion}: speak this version instead of negotiating (e.g. "1.24"). */
    public static DockerApi create(String dockerHost, Optional<String> apiVersion) {
        apiVersion.filter(v -> !isSupported(v)).ifPresent(v -> {
            throw new IllegalArgumentException("Docker API " + v + " is not supported");
        });
        URI uri = URI.create(dockerHost);
        DockerHttpClient http = new ZerodepDockerHttpClient.Builder().dockerHost(uri)
                .connectionTimeout(Duration.ofSeconds(5)).responseTimeout(Duration.ofSeconds(30))
                .maxConnections(16).build();
        // The event stream stays open for days: no response timeout on its own client.
        DockerHttpClient streamHttp = new ZerodepDockerHttpClient.Builder().dockerHost(uri)
                .connectionTimeout(Duration.ofSeconds(5)).maxConnections(2).build();
        return new DockerApi(dockerHost, http, streamHttp, apiVersion);
    }

    /** {@code GET /_ping}: true if the daemon answered OK within {@link #PING_TIMEOUT}. */
    public boolean ping() {
        return DockerPing.ping(URI.create(host), PING_TIMEOUT);
    }

    public String host() {
        return host;
    }

    /** Asks the daemon for its API version and (re)builds the clients for the agreed one. */
    public String negotiate() throws DockerException {
        JsonNode version = get("/version");
        String daemon = version.path("ApiVersion").asText("");
        if (daemon.isEmpty()) {
            throw new DockerException("the daemon did not say its API version");
        }
        if (compare(daemon, OLDEST_SUPPORTED) < 0) {
            throw new DockerException("Docker API " + daemon + " is older than " + OLDEST_SUPPORTED + " (Docker 1.12)");
        }
        String agreed = forcedVersion.orElse(compare(daemon, NEWEST_KNOWN) < 0 ? daemon : NEWEST_KNOWN);
        Clients current = clients;
        if (current == null || !current.version().equals(agreed)) {
            DefaultDockerClientConfig config = DefaultDockerClientConfig.createDefaultConfigBuilder()
                    .withDockerHost(host).withApiVersion(agreed).build();
            clients = new Clients(agreed, DockerClientImpl.getInstance(config, http),
                    DockerClientImpl.getInstance(config, streamHttp));
        }
        return agreed;
    }

    private Clients clients() throws DockerException {
        Clients current = clients;
        if (current == null) {
            negotiate();
            current = clients;
        }
        return current;
    }

    public String apiVersion() throws DockerException {
        return clients().version();
    }

    public ContainerInfo inspect(String idOrName) throws DockerException {
        requireContainerRef(idOrName);
        return ContainerInspectParser.parse(get("/v" + clients().version() + "/containers/" + idOrName + "/json"));
    }

    /** Ids of running containers, oldest first. */
    public List<String> runningContainerIds() throws DockerException {
        Clients c = clients();
        return call(() -> c.requests().listContainersCmd().withStatusFilter(List.of("running")).exec()
                .reversed().stream().map(Container::getId).toList());
    }

    /**
     * Subscribes to container events from {@code since} (Docker's "seconds.nanos" text, or
     * null for now on). The callback runs on docker-java's stream thread: keep it short.
     */
    public Closeable containerEvents(String since, ResultCallback<Event> callback) throws DockerException {
        DockerClient client = clients().stream();
        return call(() -> {
            var cmd = client.eventsCmd().withEventTypeFilter(EventType.CONTAINER)
                    .withEventFilter("create", "start", "die", "destroy");
            if (since != null) {
                cmd = cmd.withSince(since);
            }
            return cmd.exec(callback);
        });
    }

    private JsonNode get(String path) throws DockerException {
        return execute(DockerHttpClient.Request.builder().method(DockerHttpClient.Request.Method.GET).path(path).build(),
                path);
    }

    private JsonNode execute(DockerHttpClient.Request request, String path) throws DockerException {
        try (DockerHttpClient.Response response = call(() -> http.execute(request));
             InputStream body = response.getBody()) {
            byte[] bytes = body.readNBytes(MAX_RESPONSE + 1);
            if (bytes.length > MAX_RESPONSE) {
                throw new DockerException(path + ": response larger than " + MAX_RESPONSE + " bytes");
            }
            if (response.getStatusCode() == 404 && path.contains("/containers/")) {
                throw new DockerException.NoSuchContainer(path.split("/")[3]);
            }
            if (response.getStatusCode() / 100 != 2) {
                throw new DockerException(path + ": HTTP " + response.getStatusCode() + ": "
                        + new String(bytes, 0, Math.min(bytes.length, 300), java.nio.charset.StandardCharsets.UTF_8).trim());
            }
            return bytes.length == 0 ? JSON.createObjectNode() : JSON.readTree(bytes);
        } catch (IOException e) {
            throw new DockerException.Unreachable("reading " + path + ": " + e.getMessage(), e);
        }
    }

    @FunctionalInterface
    private interface DockerCall<T> {
        T run() throws Exception;
    }

    /** docker-java reports everything as unchecked exceptions; sort them into ours once, here. */
    private static <T> T call(DockerCall<T> call) throws DockerException {
        try {
            return call.run();
        } catch (DockerException e) {
            throw e;
        } catch (com.github.dockerjava.api.exception.NotFoundException e) {
            throw new DockerException.NoSuchContainer(String.valueOf(e.getMessage()).trim());
        } catch (com.github.dockerjava.api.exception.DockerException e) {
            throw new DockerException(String.valueOf(e.getMessage()).trim(), e);
        } catch (Exception e) {
            Throwable cause = e;
            while (cause.getCause() != null && !(cause instanceof IOException)) {
                cause = cause.getCause();
            }
            throw new DockerException.Unreachable(cause.getClass().getSimpleName() + ": " + cause.getMessage(), e);
        }
    }

    private static void requireContainerRef(String ref) throws DockerException {
        if (!CONTAINER_REF.matcher(ref).matches()) {
            throw new DockerException("not a container id or name: " + ref);
        }
    }

    /** Whether this agent can speak Docker API {@code version} ("1.24" .. {@link #NEWEST_KNOWN}). */
    public static boolean isSupported(String version) {
        return version.matches("[0-9]{1,3}\\.[0-9]{1,3}")
                && compare(version, OLDEST_SUPPORTED) >= 0 && compare(version, NEWEST_KNOWN) <= 0;
    }

    static int compare(String a, String b) {
        String[] x = a.split("\\.");
        String[] y = b.split("\\.");
        for (int i = 0; i < Math.max(x.length, y.length); i++) {
            int xi = i < x.length ? Integer.parseInt(x[i]) : 0;
            int yi = i < y.length ? Integer.parseInt(y[i]) : 0;
            if (xi != yi) {
                return Integer.compare(xi, yi);
            }
        }
        return 0;
    }

    @Override
    public void close() {
        try {
            http.close();
            streamHttp.close();
        } catch (IOException ignored) {
            // Closing sockets on shutdown: nothing to report.
        }
    }
}
