package io.driveralias.agent.docker;

import static io.driveralias.agent.docker.JsonReading.firstText;
import static io.driveralias.agent.docker.JsonReading.item;
import static io.driveralias.agent.docker.JsonReading.requireObject;
import static io.driveralias.agent.docker.JsonReading.startsWithAny;
import static io.driveralias.agent.docker.JsonReading.strings;
import static io.driveralias.agent.docker.JsonReading.text;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.GpuRequest;
import java.io.IOException;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Reads Docker's answers about a container into {@link ContainerInfo} as they stream in: only
 * the fields the agent uses are kept, everything else is skipped unread. Tolerant of missing
 * fields (old daemons omit some) and of fields of another type, which count as absent. Of the
 * labels only the kubelet's ({@code io.kubernetes.*}) are kept, of the environment only
 * NVIDIA's two variables: a container with thousands of either costs no more than one with none.
 */
final class ContainerInspectParser {

    /** Docker's zero time for "never started". */
    private static final String ZERO_TIME = "0001-01-01T00:00:00Z";
    /** The labels the agent reads: the kubelet's, on the containers it starts. */
    private static final String KUBELET_LABELS = "io.kubernetes.";
    private static final List<String> GPU_VARIABLES = List.of("NVIDIA_VISIBLE_DEVICES=", "NVIDIA_DRIVER_CAPABILITIES=");

    private ContainerInspectParser() {
    }

    /** The label the kubelet (dockershim, cri-dockerd) puts on a pod's sandbox ("pause") container. */
    static final String KUBELET_TYPE_LABEL = "io.kubernetes.docker.type";

    /** What the parser needs of the daemon: its default runtime, and which runtimes are NVIDIA's. */
    record Runtimes(String defaultRuntime, Set<String> gpuRuntimes) {
    }

    /** The fields of one container as they arrive, in whatever order Docker writes them. */
    private static final class Fields {
        String id = "";
        String name = "";
        String image = "";
        String state = "";
        String user = "";
        Map<String, String> labels = Map.of();
        List<String> env = List.of();
        boolean running;
        int pid;
        String startedAt = "";
        List<ContainerInfo.Mount> mounts = List.of();
        String storage = "";
        Map<String, String> graphData = Map.of();
        HostSettings host = HostSettings.NONE;
    }

    /** {@code GET /containers/{id}/json}, the parser just created on it. */
    static ContainerInfo parse(JsonParser p, Runtimes runtimes) throws IOException {
        Fields f = new Fields();
        requireObject(p, p.nextToken());
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            JsonToken value = p.nextToken();
            switch (field) {
                case "Id" -> f.id = text(p, value);
                case "Name" -> f.name = text(p, value);
                case "Config" -> config(p, value, f);
                case "State" -> state(p, value, f);
                case "Mounts" -> f.mounts = mounts(p, value);
                case "GraphDriver" -> graphDriver(p, value, f);
                case "HostConfig" -> f.host = HostSettings.read(p, value);
                default -> p.skipChildren();
            }
        }
        String storage = f.storage;
        return ContainerInfo.builder(f.id)
                .name(withoutSlash(f.name))
                .image(f.image)
                .labels(f.labels)
                .sandbox(isSandbox(f.labels))
                .running(f.running)
                .pid(f.pid)
                .startedAt(time(f.startedAt))
                .mounts(f.mounts)
                .storage(storage)
                .overlay(overlay(storage, f.graphData))
                .readOnlyRootfs(f.host.readOnlyRootfs().orElse(false))
                .user(f.user)
                .gpu(gpu(f.host, f.env, runtimes))
                .build();
    }

    /** What {@code GET /containers/json} says of a container, as far as the agent reads it. */
    record Listed(String id, String name, String image, Map<String, String> labels, List<ContainerInfo.Mount> mounts) {
    }

    /** The entry of a container list for {@code id}, if that container is only created (never started). */
    static Optional<Listed> findCreated(JsonParser list, String id) throws IOException {
        if (list.nextToken() != JsonToken.START_ARRAY) {
            throw new com.fasterxml.jackson.core.JsonParseException(list, "not a list of containers");
        }
        for (JsonToken t = list.nextToken(); item(t); t = list.nextToken()) {
            if (t != JsonToken.START_OBJECT) {
                list.skipChildren();
                continue;
            }
            Fields f = listed(list);
            if (f.id.equals(id) && f.state.equals("created")) {
                return Optional.of(new Listed(f.id, withoutSlash(f.name), f.image, f.labels, f.mounts));
            }
        }
        return Optional.empty();
    }

    /**
     * A listed, created container with what the list lacks from Docker's own files: its overlay
     * paths, its {@code hostconfig.json} (read-only root, runtime, device requests) and the
     * environment in its {@code config.v2.json}. Not running, never started.
     */
    static ContainerInfo created(Listed c, String storage, Map<String, String> overlayPaths, HostSettings host,
                                 List<String> env, Runtimes runtimes) {
        return ContainerInfo.builder(c.id())
                .name(c.name())
                .image(c.image())
                .labels(c.labels())
                .sandbox(isSandbox(c.labels()))
                .mounts(c.mounts())
                .storage(storage)
                .overlay(overlay(storage, overlayPaths))
                .readOnlyRootfs(host.readOnlyRootfs().orElse(false))
                .gpu(gpu(host, env, runtimes))
                .build();
    }

    /** One entry of the list, its opening brace just read. */
    private static Fields listed(JsonParser p) throws IOException {
        Fields f = new Fields();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            JsonToken value = p.nextToken();
            switch (field) {
                case "Id" -> f.id = text(p, value);
                case "Names" -> f.name = firstText(p, value);
                case "Image" -> f.image = text(p, value);
                case "Labels" -> f.labels = kubeletLabels(p, value);
                case "Mounts" -> f.mounts = mounts(p, value);
                case "State" -> f.state = text(p, value);
                default -> p.skipChildren();
            }
        }
        return f;
    }

    /** {@code Config.Env} of Docker's {@code config.v2.json}: NVIDIA's variables only. */
    static List<String> configEnvironment(JsonParser p) throws IOException {
        requireObject(p, p.nextToken());
        List<String> env = List.of();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            JsonToken value = p.nextToken();
            if (field.equals("Config") && value == JsonToken.START_OBJECT) {
                Fields f = new Fields();
                config(p, value, f);
                env = f.env;
            } else {
                p.skipChildren();
            }
        }
        return env;
    }

    /** overlay2's paths from {@code GraphDriver.Data}; none for other storage drivers. */
    static Optional<ContainerInfo.OverlayLayers> overlay(String storage, Map<String, String> data) {
        if (!storage.equals("overlay2")) {
            return Optional.empty();
        }
        return Optional.of(new ContainerInfo.OverlayLayers(data.getOrDefault("UpperDir", ""),
                data.getOrDefault("LowerDir", ""), data.getOrDefault("MergedDir", "")));
    }

    private static void config(JsonParser p, JsonToken start, Fields f) throws IOException {
        if (start != JsonToken.START_OBJECT) {
            p.skipChildren();
            return;
        }
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            JsonToken value = p.nextToken();
            switch (field) {
                case "Image" -> f.image = text(p, value);
                case "User" -> f.user = text(p, value);
                case "Labels" -> f.labels = kubeletLabels(p, value);
                case "Env" -> f.env = gpuVariables(p, value);
                default -> p.skipChildren();
            }
        }
    }

    private static void state(JsonParser p, JsonToken start, Fields f) throws IOException {
        if (start != JsonToken.START_OBJECT) {
            p.skipChildren();
            return;
        }
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            JsonToken value = p.nextToken();
            switch (field) {
                case "Running" -> f.running = value == JsonToken.VALUE_TRUE;
                case "Pid" -> f.pid = value == JsonToken.VALUE_NUMBER_INT && p.getNumberType() == JsonParser.NumberType.INT
                        ? p.getIntValue() : 0;
                case "StartedAt" -> f.startedAt = text(p, value);
                default -> p.skipChildren();
            }
        }
    }

    private static void graphDriver(JsonParser p, JsonToken start, Fields f) throws IOException {
        if (start != JsonToken.START_OBJECT) {
            p.skipChildren();
            return;
        }
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            JsonToken value = p.nextToken();
            switch (field) {
                case "Name" -> f.storage = text(p, value);
                case "Data" -> f.graphData = overlayData(p, value);
                default -> p.skipChildren();
            }
        }
    }

    private static Map<String, String> overlayData(JsonParser p, JsonToken start) throws IOException {
        Map<String, String> data = new HashMap<>();
        strings(p, start, key -> key.equals("UpperDir") || key.equals("LowerDir") || key.equals("MergedDir"), data);
        return data;
    }

    private static Map<String, String> kubeletLabels(JsonParser p, JsonToken start) throws IOException {
        Map<String, String> labels = new HashMap<>();
        strings(p, start, key -> key.startsWith(KUBELET_LABELS), labels);
        return labels;
    }

    /** The environment's NVIDIA variables, in order; other entries are never made into strings. */
    private static List<String> gpuVariables(JsonParser p, JsonToken start) throws IOException {
        if (start != JsonToken.START_ARRAY) {
            p.skipChildren();
            return List.of();
        }
        List<String> env = new ArrayList<>();
        for (JsonToken t = p.nextToken(); item(t); t = p.nextToken()) {
            if (t == JsonToken.VALUE_STRING && startsWithAny(p, GPU_VARIABLES)) {
                env.add(p.getText());
            } else {
                p.skipChildren();
            }
        }
        return env;
    }

    private static List<ContainerInfo.Mount> mounts(JsonParser p, JsonToken start) throws IOException {
        if (start != JsonToken.START_ARRAY) {
            p.skipChildren();
            return List.of();
        }
        List<ContainerInfo.Mount> mounts = new ArrayList<>();
        for (JsonToken t = p.nextToken(); item(t); t = p.nextToken()) {
            if (t != JsonToken.START_OBJECT) {
                p.skipChildren();
                continue;
            }
            String type = "";
            String source = "";
            String destination = "";
            boolean readWrite = true;
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                JsonToken value = p.nextToken();
                switch (field) {
                    case "Type" -> type = text(p, value);
                    case "Source" -> source = text(p, value);
                    case "Destination" -> destination = text(p, value);
                    case "RW" -> readWrite = value != JsonToken.VALUE_FALSE;
                    default -> p.skipChildren();
                }
            }
            mounts.add(new ContainerInfo.Mount(type, source, destination, readWrite));
        }
        return mounts;
    }

    /**
     * What the container asks for in the way of a GPU: HostConfig's runtime (the daemon's default
     * where it names none), device requests and devices, Config's environment.
     */
    private static GpuRequest gpu(HostSettings host, List<String> env, Runtimes runtimes) {
        String runtime = host.runtime().isEmpty() ? runtimes.defaultRuntime() : host.runtime();
        return GpuRequest.of(runtime, runtimes.gpuRuntimes().contains(runtime), env, host.deviceRequest(),
                host.deviceNodes());
    }

    private static boolean isSandbox(Map<String, String> labels) {
        return "podsandbox".equals(labels.get(KUBELET_TYPE_LABEL));
    }

    private static String withoutSlash(String name) {
        return name.startsWith("/") ? name.substring(1) : name;
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
