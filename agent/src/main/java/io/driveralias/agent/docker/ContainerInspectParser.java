package io.driveralias.agent.docker;

import static io.driveralias.agent.docker.JsonReading.fields;
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
import io.driveralias.agent.json.CappedStrings;
import io.driveralias.agent.json.DescriptionTooLarge;
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
    /** The kubelet's labels the agent reads (dockershim, cri-dockerd). */
    private static final Set<String> KUBELET_LABEL_NAMES = Set.of("io.kubernetes.pod.name", "io.kubernetes.pod.namespace",
            "io.kubernetes.pod.uid", "io.kubernetes.container.name", "io.kubernetes.docker.type");
    /** Far more than any pod declares (Kubernetes' own validation allows a few hundred). */
    private static final int MAX_MOUNTS = 1024;

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
                case "Storage" -> snapshotter(p, value, f);
                case "HostConfig" -> f.host = HostSettings.read(p, value);
                default -> p.skipChildren();
            }
        }
        String storage = f.storage;
        return ContainerInfo.builder(f.id)
                .name(withoutSlash(f.name))
                .image(f.image)
                .labels(kubeletsOwn(withoutSlash(f.name), f.labels))
                .sandbox(isSandbox(kubeletsOwn(withoutSlash(f.name), f.labels)))
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
                .labels(kubeletsOwn(c.name(), c.labels()))
                .sandbox(isSandbox(kubeletsOwn(c.name(), c.labels())))
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
        fields(p, start, (field, value) -> {
            switch (field) {
                case "Image" -> f.image = text(p, value);
                case "User" -> f.user = text(p, value);
                case "Labels" -> f.labels = kubeletLabels(p, value);
                case "Env" -> f.env = gpuVariables(p, value);
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

    /** The kubelet's labels the agent reads, by name: an image may add thousands more under the same prefix. */
    private static Map<String, String> kubeletLabels(JsonParser p, JsonToken start) throws IOException {
        Map<String, String> labels = new HashMap<>();
        strings(p, start, KUBELET_LABEL_NAMES::contains, labels);
        labels.values().removeIf(CappedStrings::isCut);
        return labels;
    }

    /**
     * The environment's two NVIDIA variables the agent uses, the last of each; no other entry is
     * kept, and none is read past {@link JsonReading#STRING_CAP} bytes.
     */
    private static List<String> gpuVariables(JsonParser p, JsonToken start) throws IOException {
        if (start != JsonToken.START_ARRAY) {
            p.skipChildren();
            return List.of();
        }
        String[] last = new String[GPU_VARIABLES.size()];
        for (JsonToken t = p.nextToken(); item(t); t = p.nextToken()) {
            if (t == JsonToken.VALUE_STRING && startsWithAny(p, GPU_VARIABLES)) {
                String entry = JsonReading.kept(p.getText(), "an NVIDIA variable");
                last[entry.startsWith(GPU_VARIABLES.getFirst()) ? 0 : 1] = entry;
            } else {
                p.skipChildren();
            }
        }
        List<String> env = new ArrayList<>(2);
        for (String entry : last) {
            if (entry != null) {
                env.add(entry);
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
            if (mounts.size() == MAX_MOUNTS) {
                throw new DescriptionTooLarge("more than " + MAX_MOUNTS + " mounts");
            }
            mounts.add(new ContainerInfo.Mount(type, JsonReading.kept(source, "a mount's source"),
                    JsonReading.kept(destination, "a mount's destination"), readWrite));
        }
        return mounts;
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

    /**
     * The kubelet's labels, where the container is the kubelet's: Docker copies an image's labels
     * onto its containers, so an image (or whoever runs it) could name another pod, or call its
     * container a sandbox to be left alone. The kubelet (dockershim, cri-dockerd) names its
     * containers {@code k8s_<container>_<pod>_<namespace>_<uid>_<attempt>}, its sandboxes
     * {@code k8s_POD_...}, and no image chooses a container's name: the labels count only where
     * that name says the same. Elsewhere, no pod and no sandbox.
     */
    static Map<String, String> kubeletsOwn(String name, Map<String, String> labels) {
        if (labels.isEmpty()) {
            return labels;
        }
        String[] parts = name.split("_", -1);
        if (parts.length != 6 || !parts[0].equals("k8s")) {
            return Map.of();
        }
        boolean sandbox = "podsandbox".equals(labels.get(KUBELET_TYPE_LABEL));
        boolean sameContainer = sandbox ? parts[1].equals("POD")
                : !parts[1].equals("POD") && parts[1].equals(labels.get("io.kubernetes.container.name"));
        boolean samePod = parts[2].equals(labels.get("io.kubernetes.pod.name"))
                && parts[3].equals(labels.get("io.kubernetes.pod.namespace"))
                && parts[4].equals(labels.get("io.kubernetes.pod.uid"));
        return sameContainer && samePod ? labels : Map.of();
    }

    private static boolean isSandbox(Map<String, String> labels) {
        return "podsandbox".equals(labels.get(KUBELET_TYPE_LABEL));
    }

    private static String withoutSlash(String name) {
        return name.startsWith("/") ? name.substring(1) : name;
    }

    static Optional<Instant> time(String text) {
        if (text.isEmpty() || text.equals(ZERO_TIME)) {
            return Optional.empty();
        }
        Instant fast = utc(text);
        if (fast != null) {
            return Optional.of(fast);
        }
        try {
            return Optional.of(Instant.parse(text));
        } catch (DateTimeParseException e) {
            return Optional.empty();
        }
    }

    /**
     * Docker's own shape, {@code 2024-05-02T09:14:07.345678901Z} (RFC 3339 in UTC, 0 to 9
     * fraction digits), read without a formatter: one answer in every inspect. Null for any
     * other text, which {@link Instant#parse} then reads (or refuses) as before.
     */
    private static Instant utc(String t) {
        int n = t.length();
        if (n < 20 || n > 30 || t.charAt(4) != '-' || t.charAt(7) != '-' || t.charAt(10) != 'T' || t.charAt(13) != ':'
                || t.charAt(16) != ':' || t.charAt(n - 1) != 'Z' || (n > 20 && (t.charAt(19) != '.' || n == 21))) {
            return null;
        }
        int year = digits(t, 0, 4);
        int month = digits(t, 5, 7);
        int day = digits(t, 8, 10);
        int hour = digits(t, 11, 13);
        int minute = digits(t, 14, 16);
        int second = digits(t, 17, 19);
        int fraction = n > 20 ? digits(t, 20, n - 1) : 0;
        if (year < 0 || month < 1 || month > 12 || day < 1 || day > java.time.YearMonth.of(year, month).lengthOfMonth()
                || hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59 || fraction < 0) {
            return null;
        }
        long nanos = fraction;
        for (int digitsRead = Math.max(0, n - 21); digitsRead < 9; digitsRead++) {
            nanos *= 10;
        }
        long days = java.time.LocalDate.of(year, month, day).toEpochDay();
        return Instant.ofEpochSecond(days * 86_400 + hour * 3_600L + minute * 60L + second, nanos);
    }

    /** The decimal number in {@code [from, to)}, or -1 if anything there is not an ASCII digit. */
    private static int digits(String t, int from, int to) {
        int value = 0;
        for (int i = from; i < to; i++) {
            char c = t.charAt(i);
            if (c < '0' || c > '9') {
                return -1;
            }
            value = value * 10 + (c - '0');
        }
        return value;
    }
}
