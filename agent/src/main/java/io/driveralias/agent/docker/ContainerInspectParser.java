package io.driveralias.agent.docker;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.GpuRequest;

/**
 * Reads the inspect JSON tree into {@link ContainerInfo}. Tolerant of missing fields (old
 * daemons omit some), strict about nothing: absent means empty.
 */
final class ContainerInspectParser {

    /** Docker's zero time for "never started". */
    private static final String ZERO_TIME = "0001-01-01T00:00:00Z";

    private ContainerInspectParser() {
    }

    /** {@code defaultRuntime}: the daemon's, for a container whose HostConfig names none (old daemons). */
    static ContainerInfo parse(JsonNode json, String defaultRuntime) {
        JsonNode config = json.path("Config");
        JsonNode state = json.path("State");
        JsonNode graph = json.path("GraphDriver");
        String name = json.path("Name").asText("");
        return new ContainerInfo(
                json.path("Id").asText(""),
                name.startsWith("/") ? name.substring(1) : name,
                config.path("Image").asText(""),
                strings(config.path("Labels")),
                state.path("Running").asBoolean(false),
                state.path("Pid").asInt(0),
                time(state.path("StartedAt").asText("")),
                mounts(json.path("Mounts")),
                graph.path("Name").asText(""),
                strings(graph.path("Data")),
                json.path("HostConfig").path("ReadonlyRootfs").asBoolean(false),
                config.path("User").asText(""),
                gpu(json.path("HostConfig"), config, defaultRuntime));
    }

    /**
     * A created container as {@code GET /containers/json} lists it, with what the list lacks
     * from Docker's own files: its overlay paths, its {@code hostconfig.json} (read-only root,
     * runtime, device requests) and the {@code Config} of its {@code config.v2.json}
     * (environment). Not running, never started.
     */
    static ContainerInfo listed(JsonNode json, String graphDriver, Map<String, String> graphData, JsonNode hostConfig,
                                JsonNode config, String defaultRuntime) {
        JsonNode names = json.path("Names");
        String name = names.isArray() && !names.isEmpty() ? names.get(0).asText("") : "";
        return new ContainerInfo(json.path("Id").asText(""), name.startsWith("/") ? name.substring(1) : name,
                json.path("Image").asText(""), strings(json.path("Labels")), false, 0, Optional.empty(),
                mounts(json.path("Mounts")), graphDriver, graphData, hostConfig.path("ReadonlyRootfs").asBoolean(false),
                "", gpu(hostConfig, config, defaultRuntime));
    }

    /** What the container asks of a GPU runtime: HostConfig's runtime and device requests, Config's environment. */
    static GpuRequest gpu(JsonNode hostConfig, JsonNode config, String defaultRuntime) {
        String runtime = hostConfig.path("Runtime").asText("");
        boolean deviceRequest = false;
        for (JsonNode request : hostConfig.path("DeviceRequests")) {
            List<List<String>> capabilities = new ArrayList<>();
            for (JsonNode set : request.path("Capabilities")) {
                capabilities.add(texts(set));
            }
            deviceRequest |= GpuRequest.isGpuDeviceRequest(request.path("Driver").asText(""), capabilities);
        }
        return GpuRequest.of(runtime.isEmpty() ? defaultRuntime : runtime, texts(config.path("Env")), deviceRequest);
    }

    private static List<String> texts(JsonNode array) {
        List<String> texts = new ArrayList<>();
        for (JsonNode item : array) {
            if (item.isTextual()) {
                texts.add(item.asText());
            }
        }
        return texts;
    }

    private static Map<String, String> strings(JsonNode object) {
        Map<String, String> map = new LinkedHashMap<>();
        if (object.isObject()) {
            object.properties().forEach(e -> {
                if (e.getValue().isTextual()) {
                    map.put(e.getKey(), e.getValue().asText());
                }
            });
        }
        return map;
    }

    private static List<ContainerInfo.Mount> mounts(JsonNode array) {
        List<ContainerInfo.Mount> mounts = new ArrayList<>();
        for (JsonNode m : array) {
            mounts.add(new ContainerInfo.Mount(m.path("Type").asText(""), m.path("Source").asText(""),
                    m.path("Destination").asText(""), m.path("RW").asBoolean(true)));
        }
        return mounts;
    }

    private static Optional<Instant> time(String text) {
        if (text.isEmpty() || text.equals(ZERO_TIME)) {
            return Optional.empty();
        }
        try {
            return Optional.of(Instant.parse(text));
        } catch (DateTimeParseException e) {
            return Optional.empty();
        }
    }
}
