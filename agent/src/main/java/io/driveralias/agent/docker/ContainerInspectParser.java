package io.driveralias.agent.docker;

import static io.driveralias.agent.docker.JsonReading.fields;
import static io.driveralias.agent.docker.JsonReading.firstText;
import static io.driveralias.agent.docker.JsonReading.item;
import static io.driveralias.agent.docker.JsonReading.requireObject;
import static io.driveralias.agent.docker.JsonReading.strings;
import static io.driveralias.agent.docker.JsonReading.text;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.GpuRequest;
import java.io.IOException;
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


    private ContainerInspectParser() {
    }

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
                case "Mounts" -> f.mounts = ContainerLists.mounts(p, value);
                case "GraphDriver" -> graphDriver(p, value, f);
                case "Storage" -> snapshotter(p, value, f);
                case "HostConfig" -> f.host = HostSettings.read(p, value);
                default -> p.skipChildren();
            }
        }
        String storage = f.storage;
        return ContainerInfo.builder(f.id)
                .name(withoutSlash(f.name))
                .image(f.image)
                .labels(KubeletLabels.kubeletsOwn(withoutSlash(f.name), f.labels))
                .sandbox(KubeletLabels.isSandbox(KubeletLabels.kubeletsOwn(withoutSlash(f.name), f.labels)))
                .running(f.running)
                .pid(f.pid)
                .startedAt(DockerTime.parse(f.startedAt))
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
        return find(list, id, true);
    }

    /** The entry of a container list for {@code id}; with {@code createdOnly}, only if it is created and never started. */
    static Optional<Listed> find(JsonParser list, String id, boolean createdOnly) throws IOException {
        if (list.nextToken() != JsonToken.START_ARRAY) {
            throw new com.fasterxml.jackson.core.JsonParseException(list, "not a list of containers");
        }
        for (JsonToken t = list.nextToken(); item(t); t = list.nextToken()) {
            if (t != JsonToken.START_OBJECT) {
                list.skipChildren();
                continue;
            }
            Fields f = listed(list);
            if (f.id.equals(id) && (!createdOnly || f.state.equals("created"))) {
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
        return created(c, storage, overlay(storage, overlayPaths), host, env, runtimes);
    }

    /** The same, with its root's layers as found (overlay2's layer store, or the image store's snapshot). */
    static ContainerInfo created(Listed c, String storage, Optional<ContainerInfo.OverlayLayers> layers, HostSettings host,
                                 List<String> env, Runtimes runtimes) {
        return ContainerInfo.builder(c.id())
                .name(c.name())
                .image(c.image())
                .labels(KubeletLabels.kubeletsOwn(c.name(), c.labels()))
                .sandbox(KubeletLabels.isSandbox(KubeletLabels.kubeletsOwn(c.name(), c.labels())))
                .mounts(c.mounts())
                .storage(storage)
                .overlay(layers)
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
                case "Labels" -> f.labels = KubeletLabels.read(p, value);
                case "Mounts" -> f.mounts = ContainerLists.mounts(p, value);
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
        fields(p, start, (field, value) -> {
            switch (field) {
                case "Image" -> f.image = text(p, value);
                case "User" -> f.user = text(p, value);
                case "Labels" -> f.labels = KubeletLabels.read(p, value);
                case "Env" -> f.env = ContainerLists.gpuVariables(p, value);
                default -> p.skipChildren();
            }
        });
    }

    private static void state(JsonParser p, JsonToken start, Fields f) throws IOException {
        fields(p, start, (field, value) -> {
            switch (field) {
                case "Running" -> f.running = value == JsonToken.VALUE_TRUE;
                case "Pid" -> f.pid = value == JsonToken.VALUE_NUMBER_INT && p.getNumberType() == JsonParser.NumberType.INT
                        ? p.getIntValue() : 0;
                case "StartedAt" -> f.startedAt = text(p, value);
                default -> p.skipChildren();
            }
        });
    }

    private static void graphDriver(JsonParser p, JsonToken start, Fields f) throws IOException {
        fields(p, start, (field, value) -> {
            switch (field) {
                case "Name" -> f.storage = text(p, value);
                case "Data" -> f.graphData = overlayData(p, value);
                default -> p.skipChildren();
            }
        });
    }

    /**
     * {@code Storage.RootFS.Snapshot.Name}: the snapshotter of a container in containerd's image
     * store, where API 1.52 (Docker 29) and later say it instead of {@code GraphDriver.Name}.
     */
    private static void snapshotter(JsonParser p, JsonToken start, Fields f) throws IOException {
        fields(p, start, (field, value) -> {
            if (field.equals("RootFS")) {
                fields(p, value, (rootField, rootValue) -> {
                    if (rootField.equals("Snapshot")) {
                        fields(p, rootValue, (name, nameValue) -> {
                            String snapshotter = name.equals("Name") ? text(p, nameValue) : skipped(p);
                            if (!snapshotter.isEmpty() && f.storage.isEmpty()) {
                                f.storage = snapshotter;
                            }
                        });
                    } else {
                        p.skipChildren();
                    }
                });
            } else {
                p.skipChildren();
            }
        });
    }

    private static String skipped(JsonParser p) throws IOException {
        p.skipChildren();
        return "";
    }

    private static Map<String, String> overlayData(JsonParser p, JsonToken start) throws IOException {
        Map<String, String> data = new HashMap<>();
        strings(p, start, key -> key.equals("UpperDir") || key.equals("LowerDir") || key.equals("MergedDir"), data);
        return data;
    }

    /** Whether the environment decides anything: only a GPU runtime reads NVIDIA_VISIBLE_DEVICES. */
    static boolean environmentMatters(HostSettings host, Runtimes runtimes) {
        String runtime = host.runtime().isEmpty() ? runtimes.defaultRuntime() : host.runtime();
        return runtimes.gpuRuntimes().contains(runtime);
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

    private static String withoutSlash(String name) {
        return name.startsWith("/") ? name.substring(1) : name;
    }
}
