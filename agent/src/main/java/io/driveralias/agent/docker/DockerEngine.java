package io.driveralias.agent.docker;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.github.dockerjava.transport.DockerHttpClient;
import com.github.dockerjava.zerodep.ZerodepDockerHttpClient;
import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.DockerApiVersions;
import io.driveralias.agent.core.Printable;
import io.driveralias.agent.json.DescriptionTooLarge;
import io.driveralias.agent.live.ContainerRuntime;
import io.driveralias.agent.live.ContainerRuntimeException;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Docker's Engine API over docker-java's zerodep transport: plain HTTP requests on the
 * daemon's socket, each answer read as it streams in with Jackson's parser, bounded, and only
 * for the fields the agent uses (no tree of the whole answer). The API version is negotiated
 * with the daemon at every (re)connect (see {@link DockerApiVersions}), or fixed by the operator
 * ({@code --docker-api-version}), which the daemon then has to accept.
 */
public final class DockerEngine implements ContainerRuntime {

    /** Inspect output carries user-chosen labels and env: bounded. */
    private static final int MAX_RESPONSE = JsonReading.MAX_ANSWER;
    /** Thousands of containers, each listed with its labels, ports and mounts. */
    private static final long MAX_LIST = 256L << 20;
    private static final int MAX_ERROR = 300;
    private static final Pattern CONTAINER_REF = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.-]{0,254}");
    private static final Pattern SINCE = Pattern.compile("[0-9]{1,19}(\\.[0-9]{1,9})?");
    private static final String EVENT_FILTERS = query(
            "{\"type\":[\"container\"],\"event\":[\"create\",\"start\",\"die\",\"destroy\"]}");
    private static final String RUNNING = query("{\"status\":[\"running\"]}");
    static final Duration PING_TIMEOUT = Duration.ofSeconds(2);

    private final String host;
    private final DockerHttpClient http;
    private final DockerHttpClient streamHttp;
    private final Optional<String> forcedVersion;
    private volatile String version;
    /** Docker's data directory and storage driver, from {@code /info} at each (re)connect. */
    private volatile String rootDir = "";
    private volatile String storageDriver = "";
    /** The runtime of a container whose HostConfig names none (from {@code /info}), and NVIDIA's runtimes. */
    private volatile ContainerInspectParser.Runtimes runtimes;
    private final Set<String> gpuRuntimes;

    private DockerEngine(String host, DockerHttpClient http, DockerHttpClient streamHttp,
                         Optional<String> forcedVersion, Set<String> gpuRuntimes) {
        this.host = host;
        this.http = http;
        this.streamHttp = streamHttp;
        this.forcedVersion = forcedVersion;
        this.gpuRuntimes = Set.copyOf(gpuRuntimes);
        this.runtimes = new ContainerInspectParser.Runtimes("runc", this.gpuRuntimes);
    }

    public static DockerEngine create(String dockerHost) {
        return create(dockerHost, Optional.empty(), Set.of("nvidia"));
    }

    /**
     * @param apiVersion  speak this version instead of negotiating (e.g. "1.24")
     * @param gpuRuntimes the OCI runtimes, as Docker names them, that add the driver's files to a
     *                    container whose {@code NVIDIA_VISIBLE_DEVICES} asks for them
     */
    public static DockerEngine create(String dockerHost, Optional<String> apiVersion, Set<String> gpuRuntimes) {
        apiVersion.filter(v -> !DockerApiVersions.isSupported(v)).ifPresent(v -> {
            throw new IllegalArgumentException("Docker API " + v + " is not supported");
        });
        URI uri = URI.create(dockerHost);
        DockerHttpClient http = new ZerodepDockerHttpClient.Builder().dockerHost(uri)
                .connectionTimeout(Duration.ofSeconds(5)).responseTimeout(Duration.ofSeconds(30))
                .maxConnections(16).build();
        // The event stream stays open for days: no response timeout on its own client.
        DockerHttpClient streamHttp = new ZerodepDockerHttpClient.Builder().dockerHost(uri)
                .connectionTimeout(Duration.ofSeconds(5)).maxConnections(2).build();
        return new DockerEngine(dockerHost, http, streamHttp, apiVersion, gpuRuntimes);
    }

    /** A frozen daemon still accepts connections: only a deadline over the whole call tells. */
    @Override
    public boolean ping() {
        return DockerPing.ping(URI.create(host), PING_TIMEOUT);
    }

    @Override
    public String name() {
        return "docker";
    }

    @Override
    public String endpoint() {
        return host;
    }

    @Override
    public String connect() throws ContainerRuntimeException {
        return "API " + negotiate();
    }

    /** Agrees on the API version with the daemon and learns its layout; returns the version. */
    public String negotiate() throws ContainerRuntimeException {
        Map<String, String> answer = read("/version", MAX_RESPONSE, p -> topLevelStrings(p, Set.of("ApiVersion")));
        String daemon = answer.getOrDefault("ApiVersion", "");
        if (!DockerApiVersions.isVersion(daemon)) {
            throw new ContainerRuntimeException("the daemon did not say its API version");
        }
        if (DockerApiVersions.compare(daemon, DockerApiVersions.OLDEST_SUPPORTED) < 0) {
            throw new ContainerRuntimeException("Docker API " + daemon + " is older than " + DockerApiVersions.OLDEST_SUPPORTED
                    + " (Docker 1.12)");
        }
        version = forcedVersion.orElse(DockerApiVersions.agreed(daemon));
        try {
            Map<String, String> info = read("/v" + version + "/info", MAX_RESPONSE,
                    p -> topLevelStrings(p, Set.of("DockerRootDir", "Driver", "DefaultRuntime")));
            rootDir = info.getOrDefault("DockerRootDir", "");
            storageDriver = info.getOrDefault("Driver", "");
            runtimes = new ContainerInspectParser.Runtimes(info.getOrDefault("DefaultRuntime", "runc"), gpuRuntimes);
        } catch (ContainerRuntimeException e) {
            // Only the look at created containers without inspect needs it: inspect serves.
            rootDir = "";
            storageDriver = "";
        }
        return version;
    }

    /** The string members {@code wanted} of a JSON object; everything else skipped. */
    static Map<String, String> topLevelStrings(JsonParser p, Set<String> wanted) throws IOException {
        Map<String, String> found = new java.util.HashMap<>();
        JsonReading.requireObject(p, p.nextToken());
        JsonReading.strings(p, JsonToken.START_OBJECT, wanted::contains, found);
        return found;
    }

    /** The version agreed, negotiating first if none is yet. */
    public String apiVersion() throws ContainerRuntimeException {
        String v = version;
        return v != null ? v : negotiate();
    }

    @Override
    public ContainerInfo describe(String idOrName) throws ContainerRuntimeException {
        if (!CONTAINER_REF.matcher(idOrName).matches()) {
            throw new ContainerRuntimeException("not a container id or name: " + Printable.of(idOrName));
        }
        String path = "/v" + apiVersion() + "/containers/" + idOrName + "/json";
        ContainerInspectParser.Runtimes known = runtimes;
        Optional<ContainerInfo> info = readOrNotFound(path, MAX_RESPONSE, p -> ContainerInspectParser.parse(p, known));
        return info.orElseThrow(() -> new ContainerRuntimeException.NoSuchContainer(idOrName));
    }

    @Override
    public Optional<ContainerInfo> peekCreated(String id) throws ContainerRuntimeException {
        String root = rootDir;
        if (!storageDriver.equals("overlay2") || !root.startsWith("/")) {
            return Optional.empty();
        }
        if (!CONTAINER_REF.matcher(id).matches()) {
            return Optional.empty();
        }
        String path = "/v" + apiVersion() + "/containers/json?all=1&filters=" + query("{\"id\":[\"" + id + "\"]}");
        Optional<ContainerInspectParser.Listed> listed = read(path, MAX_RESPONSE, p -> ContainerInspectParser.findCreated(p, id));
        if (listed.isEmpty()) {
            return Optional.empty();
        }
        Optional<Map<String, String>> paths = LayerStore.overlayPaths(root, id);
        Optional<InputStream> hostConfig = LayerStore.hostConfig(root, id);
        if (paths.isEmpty() || hostConfig.isEmpty()) {
            hostConfig.ifPresent(DockerEngine::closeQuietly);
            return Optional.empty();
        }
        HostSettings host = parse("hostconfig.json", hostConfig.get(), p -> HostSettings.read(p, p.nextToken()));
        if (host.readOnlyRootfs().isEmpty()) {
            return Optional.empty();
        }
        // The cheapest look first: the environment (megabytes, if its owner wants) matters only
        // under a GPU runtime, where NVIDIA_VISIBLE_DEVICES asks it for the driver's files.
        ContainerInspectParser.Runtimes known = runtimes;
        List<String> env = List.of();
        if (ContainerInspectParser.environmentMatters(host, known)) {
            Optional<InputStream> config = LayerStore.containerConfig(root, id);
            if (config.isEmpty()) {
                return Optional.empty();
            }
            env = parse("config.v2.json", config.get(), ContainerInspectParser::configEnvironment);
        }
        return Optional.of(ContainerInspectParser.created(listed.get(), storageDriver, paths.get(), host, env, known));
    }

    @Override
    public boolean runsPod(String podUid) throws ContainerRuntimeException {
        String path = "/v" + apiVersion() + "/containers/json?filters="
                + query("{\"label\":[\"io.kubernetes.pod.uid=" + podUid + "\"]}");
        try (DockerHttpClient.Response response = execute(http, get(path));
             InputStream body = new BoundedInput(response.getBody(), MAX_RESPONSE)) {
            requireOk(path, response.getStatusCode(), body);
            return !ids(body).isEmpty();
        } catch (IOException e) {
            throw new ContainerRuntimeException.Unreachable("reading " + path + ": " + e.getMessage(), e);
        }
    }

    @Override
    public List<String> runningContainerIds() throws ContainerRuntimeException {
        String path = "/v" + apiVersion() + "/containers/json?filters=" + RUNNING;
        try (DockerHttpClient.Response response = execute(http, get(path));
             InputStream body = new BoundedInput(response.getBody(), MAX_LIST)) {
            requireOk(path, response.getStatusCode(), body);
            return ids(body).reversed();
        } catch (IOException e) {
            throw new ContainerRuntimeException.Unreachable("reading " + path + ": " + e.getMessage(), e);
        }
    }

    /** The {@code Id} of each listed container (Docker lists the newest first); nothing else is read. */
    static List<String> ids(InputStream json) throws IOException {
        List<String> ids = new ArrayList<>();
        try (JsonParser p = JsonReading.parser(json)) {
            if (p.nextToken() != JsonToken.START_ARRAY) {
                throw new IOException("not a list of containers");
            }
            for (JsonToken t = p.nextToken(); t == JsonToken.START_OBJECT; t = p.nextToken()) {
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String name = p.currentName();
                    if (p.nextToken() == JsonToken.VALUE_STRING && name.equals("Id")) {
                        ids.add(p.getText());
                    } else {
                        p.skipChildren();
                    }
                }
            }
        }
        return ids;
    }

    @Override
    public EventStream events(Optional<String> since) throws ContainerRuntimeException {
        String path = "/v" + apiVersion() + "/events?filters=" + EVENT_FILTERS
                + since.filter(s -> SINCE.matcher(s).matches()).map(s -> "&since=" + s).orElse("");
        DockerHttpClient.Response response = execute(streamHttp, get(path));
        try {
            InputStream body = response.getBody();
            requireOk(path, response.getStatusCode(), body);
            return new Subscription(response, new EventLines(body));
        } catch (IOException | ContainerRuntimeException | RuntimeException e) {
            response.close();
            throw e instanceof ContainerRuntimeException d ? d
                    : new ContainerRuntimeException.Unreachable("reading " + path + ": " + e.getMessage(), e);
        }
    }

    /** One open event stream; closing the response (from any thread) ends a read in progress. */
    private record Subscription(DockerHttpClient.Response response, EventLines lines) implements EventStream {
        @Override
        public Optional<Event> next() throws ContainerRuntimeException {
            try {
                return lines.next();
            } catch (IOException | RuntimeException e) {
                throw new ContainerRuntimeException.Unreachable("event stream: " + e.getMessage(), e);
            }
        }

        @Override
        public void close() {
            try {
                response.close();
            } catch (RuntimeException ignored) {
                // Closing a stream that already broke.
            }
        }
    }

    /** Reads what it needs of an answer as it streams in; the rest of the body is left unread. */
    @FunctionalInterface
    interface AnswerReader<T> {
        T read(JsonParser parser) throws IOException;
    }

    /** The answer to a GET: a 2xx, read by {@code reader}; anything else an error. */
    private <T> T read(String path, long max, AnswerReader<T> reader) throws ContainerRuntimeException {
        Optional<T> answer = readOrNotFound(path, max, reader);
        return answer.orElseThrow(() -> new ContainerRuntimeException(path + ": HTTP 404"));
    }

    /** The same, with a 404 answered as empty (the caller's to interpret). */
    private <T> Optional<T> readOrNotFound(String path, long max, AnswerReader<T> reader) throws ContainerRuntimeException {
        try (DockerHttpClient.Response response = execute(http, get(path));
             InputStream body = new BoundedInput(response.getBody(), max)) {
            int status = response.getStatusCode();
            if (status == 404) {
                return Optional.empty();
            }
            requireOk(path, status, body);
            try (JsonParser parser = JsonReading.parser(body)) {
                return Optional.of(reader.read(parser));
            }
        } catch (DescriptionTooLarge e) {
            throw new ContainerRuntimeException.TooLarge(path + ": " + e.getMessage());
        } catch (JsonProcessingException e) {
            throw notJson(path, e);
        } catch (BoundedInput.TooLarge e) {
            throw new ContainerRuntimeException(path + ": response larger than " + max + " bytes");
        } catch (IOException e) {
            throw new ContainerRuntimeException.Unreachable("reading " + path + ": " + e.getMessage(), e);
        }
    }

    /** One of Docker's own files, read as it streams (its owner decides its size); closed here. */
    private static <T> T parse(String what, InputStream file, AnswerReader<T> reader) throws ContainerRuntimeException {
        try (InputStream in = file; JsonParser parser = JsonReading.parser(in)) {
            return reader.read(parser);
        } catch (DescriptionTooLarge e) {
            throw new ContainerRuntimeException.TooLarge(what + ": " + e.getMessage());
        } catch (IOException e) {
            throw notJson(what, e);
        }
    }

    private static ContainerRuntimeException notJson(String path, IOException e) {
        String why = e instanceof JsonProcessingException j ? j.getOriginalMessage() : e.getMessage();
        return new ContainerRuntimeException(path + ": not JSON: " + Printable.of(String.valueOf(why)));
    }

    private static void requireOk(String path, int status, InputStream body) throws IOException, ContainerRuntimeException {
        if (status / 100 != 2) {
            throw new ContainerRuntimeException(path + ": HTTP " + status + ": " + message(body.readNBytes(MAX_ERROR)));
        }
    }

    private static String message(byte[] bytes) {
        String text = new String(bytes, 0, Math.min(bytes.length, MAX_ERROR), StandardCharsets.UTF_8).trim();
        return Printable.of(text);
    }

    private static DockerHttpClient.Request get(String path) {
        return DockerHttpClient.Request.builder().method(DockerHttpClient.Request.Method.GET).path(path).build();
    }

    /** The transport reports a daemon it cannot reach as unchecked exceptions: sorted here, once. */
    private static DockerHttpClient.Response execute(DockerHttpClient client, DockerHttpClient.Request request)
            throws ContainerRuntimeException {
        try {
            return client.execute(request);
        } catch (RuntimeException e) {
            Throwable cause = e;
            while (cause.getCause() != null && !(cause instanceof IOException)) {
                cause = cause.getCause();
            }
            throw new ContainerRuntimeException.Unreachable(cause.getClass().getSimpleName() + ": " + cause.getMessage(), e);
        }
    }

    private static void closeQuietly(InputStream in) {
        try {
            in.close();
        } catch (IOException ignored) {
            // A file of Docker's opened for reading: nothing to report on closing it.
        }
    }

    private static String query(String json) {
        return URLEncoder.encode(json, StandardCharsets.UTF_8);
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
