package io.driveralias.agent.docker;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
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

    /** The label the kubelet (dockershim, cri-dockerd) puts on a pod's sandbox ("pause") container. */
    static final String KUBELET_TYPE_LABEL = "io.kubernetes.docker.type";

    /** What the parser needs of the daemon: its default runtime, and which runtimes are NVIDIA's. */
    record Runtimes(String defaultRuntime, Set<String> gpuRuntimes) {
    }

    static ContainerInfo parse(JsonNode json, Runtimes runtimes) {
        JsonNode config = json.path("Config");
        JsonNode state = json.path("State");
        JsonNode graph = json.path("GraphDriver");
        String name = json.path("Name").asText("");
        Map<String, String> labels = strings(config.path("Labels"));
        String storage = graph.path("Name").asText("");
        return ContainerInfo.builder(json.path("Id").asText(""))
                .name(name.startsWith("/") ? name.substring(1) : name)
                .image(config.path("Image").asText(""))
                .labels(labels)
                .sandbox(isSandbox(labels))
                .running(state.path("Running").asBoolean(false))
                .pid(state.path("Pid").asInt(0))
                .startedAt(time(state.path("StartedAt").asText("")))
                .mounts(mounts(json.path("Mounts")))
                .storage(storage)
                .overlay(overlay(storage, strings(graph.path("Data"))))
                .readOnlyRootfs(json.path("HostConfig").path("ReadonlyRootfs").asBoolean(false))
                .user(config.path("User").asText(""))
                .gpu(gpu(json.path("HostConfig"), config, runtimes))
                .build();
    }

    /** overlay2's paths from {@code GraphDriver.Data}; none for other storage drivers. */
    static Optional<ContainerInfo.OverlayLayers> overlay(String storage, Map<String, String> data) {
        if (!storage.equals("overlay2")) {
            return Optional.empty();
        }
        return Optional.of(new ContainerInfo.OverlayLayers(data.getOrDefault("UpperDir", ""),
                data.getOrDefault("LowerDir", ""), data.getOrDefault("MergedDir", "")));
    }

    private static boolean isSandbox(Map<String, String> labels) {
        return "podsandbox".equals(labels.get(KUBELET_TYPE_LABEL));
    }

    /**
     * A created container as {@code GET /containers/json} lists it, with what the list lacks
     * from Docker's own files: its overlay paths, its {@code hostconfig.json} (read-only root,
     * runtime, device requests) and the {@code Config} of its {@code config.v2.json}
     * (environment). Not running, never started.
     */
    static ContainerInfo listed(JsonNode json, String storage, Map<String, String> overlayPaths, JsonNode hostConfig,
                                JsonNode config, Runtimes runtimes) {
        JsonNode names = json.path("Names");
        String name = names.isArray() && !names.isEmpty() ? names.get(0).asText("") : "";
        Map<String, String> labels = strings(json.path("Labels"));
        return ContainerInfo.builder(json.path("Id").asText(""))
                .name(name.startsWith("/") ? name.substring(1) : name)
                .image(json.path("Image").asText(""))
                .labels(labels)
                .sandbox(isSandbox(labels))
                .mounts(mounts(json.path("Mounts")))
                .storage(storage)
                .overlay(overlay(storage, overlayPaths))
                .readOnlyRootfs(hostConfig.path("ReadonlyRootfs").asBoolean(false))
                .gpu(gpu(hostConfig, config, runtimes))
                .build();
    }

    /**
     * What the container asks for in the way of a GPU: HostConfig's runtime (the daemon's default
     * where it names none), device requests and devices, Config's environment.
     */
    static GpuRequest gpu(JsonNode hostConfig, JsonNode config, Runtimes runtimes) {
        String named = hostConfig.path("Runtime").asText("");
        String runtime = named.isEmpty() ? runtimes.defaultRuntime() : named;
        boolean deviceRequest = false;
        for (JsonNode request : hostConfig.path("DeviceRequests")) {
            List<List<String>> capabilities = new ArrayList<>();
            for (JsonNode set : request.path("Capabilities")) {
                capabilities.add(texts(set));
            }
            deviceRequest |= GpuRequest.isGpuDeviceRequest(request.path("Driver").asText(""), capabilities,
                    texts(request.path("DeviceIDs")));
        }
        boolean deviceNodes = false;
        for (JsonNode device : hostConfig.path("Devices")) {
            deviceNodes |= GpuRequest.isNvidiaDeviceNode(device.path("PathOnHost").asText(""));
        }
        return GpuRequest.of(runtime, runtimes.gpuRuntimes().contains(runtime), texts(config.path("Env")), deviceRequest,
                deviceNodes);
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
