package io.driveralias.agent.containerd;

import io.driveralias.agent.json.DescriptionTooLarge;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.GpuRequest;
import io.driveralias.agent.core.Printable;
import io.driveralias.agent.json.CappedStrings;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * Reads the few fields the agent uses from an OCI runtime spec (JSON, as containerd stores it in
 * a container's record and a task's bundle), streaming: nothing else is kept, whatever the spec
 * holds. Every string is cut at {@link #STRING_CAP} bytes as it streams ({@link CappedStrings}),
 * so an environment value of megabytes costs the parser a few KiB whether or not it is kept;
 * what is kept (the two NVIDIA variables, bind mounts, the CRI's and CDI's annotations) must fit
 * {@link #MAX_TEXT} bytes a string and {@link #BUDGET} bytes together, else the spec is refused
 * ({@link DescriptionTooLarge}): a container the agent cannot describe within its bounds is
 * reported, never a cause of memory it does not have. Anything that is not JSON of the expected
 * shape is an {@link IOException}.
 */
final class OciSpecParser {

    static final int MAX_TEXT = 4096;
    /** Longer than any string kept, so that one over {@link #MAX_TEXT} is told from one at it. */
    static final int STRING_CAP = 2 * MAX_TEXT;
    /** What one spec may leave in memory: hundreds of binds and annotations of ordinary length. */
    static final int BUDGET = 256 << 10;
    /** What each kept entry costs besides its text, so that empty strings do not make entries free. */
    private static final int ENTRY_COST = 32;
    private static final java.util.Set<String> CRI_ANNOTATIONS = java.util.Set.of("io.kubernetes.cri.container-type",
            "io.kubernetes.cri.container-name", "io.kubernetes.cri.sandbox-id", "io.kubernetes.cri.sandbox-name",
            "io.kubernetes.cri.sandbox-namespace", "io.kubernetes.cri.sandbox-uid");
    private static final String VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES=";
    private static final String CAPABILITIES = "NVIDIA_DRIVER_CAPABILITIES=";
    private static final JsonFactory JSON = JsonFactory.builder()
            .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(64).maxStringLength(STRING_CAP + 16)
                    .maxNumberLength(32).build())
            // Names are the spec owner's text: never kept in a table that outlives the spec.
            .disable(JsonFactory.Feature.CANONICALIZE_FIELD_NAMES)
            .disable(JsonFactory.Feature.INTERN_FIELD_NAMES)
            .build();

    private String visibleDevices;
    private String capabilities;
    private final List<ContainerInfo.Mount> binds = new ArrayList<>();
    private final Map<String, String> annotations = new LinkedHashMap<>();
    private OptionalLong uid = OptionalLong.empty();
    private OptionalLong gid = OptionalLong.empty();
    private boolean nvidiaDevices;
    private boolean readOnlyRoot;
    private int budget = BUDGET;

    private OciSpecParser() {
    }

    static OciSpec parse(InputStream json) throws IOException {
        OciSpecParser spec = new OciSpecParser();
        try (JsonParser p = JSON.createParser(new CappedStrings(json, STRING_CAP))) {
            spec.root(p);
        }
        List<String> gpuEnvironment = new ArrayList<>(2);
        if (spec.visibleDevices != null) {
            gpuEnvironment.add(spec.visibleDevices);
        }
        if (spec.capabilities != null) {
            gpuEnvironment.add(spec.capabilities);
        }
        return new OciSpec(gpuEnvironment, spec.uid, spec.gid, spec.binds, spec.annotations, spec.nvidiaDevices,
                spec.readOnlyRoot);
    }

    /** A string the spec keeps: within its bounds, else the whole spec is refused. */
    private String keep(String text, String what) throws DescriptionTooLarge {
        if (CappedStrings.isCut(text) || text.length() > MAX_TEXT) {
            throw new DescriptionTooLarge(what + " longer than " + MAX_TEXT + " bytes");
        }
        budget -= text.length() + ENTRY_COST;
        if (budget < 0) {
            throw new DescriptionTooLarge("its mounts, annotations and NVIDIA variables together over " + (BUDGET >> 10) + " KiB");
        }
        return text;
    }

    private void root(JsonParser p) throws IOException {
        expect(p, p.nextToken(), JsonToken.START_OBJECT, "spec");
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken value = p.nextToken();
            switch (name) {
                case "process" -> object(p, value, "process", this::process);
                case "root" -> object(p, value, "root", (q, field, v) -> {
                    if (field.equals("readonly") && v.isBoolean()) {
                        readOnlyRoot = v == JsonToken.VALUE_TRUE;
                    } else {
                        q.skipChildren();
                    }
                });
                case "mounts" -> array(p, value, "mounts", q -> mount(q));
                case "annotations" -> object(p, value, "annotations", this::annotation);
                case "linux" -> object(p, value, "linux", (q, field, v) -> {
                    if (field.equals("devices")) {
                        array(q, v, "linux.devices", this::device);
                    } else {
                        q.skipChildren();
                    }
                });
                default -> p.skipChildren();
            }
        }
    }

    private void process(JsonParser p, String field, JsonToken value) throws IOException {
        switch (field) {
            case "env" -> array(p, value, "process.env", q -> {
                expect(q, q.currentToken(), JsonToken.VALUE_STRING, "process.env entry");
                // At most STRING_CAP bytes of any entry are ever read; only the two NVIDIA variables are kept.
                String entry = q.getText();
                if (entry.startsWith(VISIBLE_DEVICES)) {
                    visibleDevices = keep(entry, "NVIDIA_VISIBLE_DEVICES");
                } else if (entry.startsWith(CAPABILITIES)) {
                    capabilities = keep(entry, "NVIDIA_DRIVER_CAPABILITIES");
                }
            });
            case "user" -> object(p, value, "process.user", (q, name, v) -> {
                if (name.equals("uid") && v == JsonToken.VALUE_NUMBER_INT) {
                    uid = OptionalLong.of(q.getLongValue());
                } else if (name.equals("gid") && v == JsonToken.VALUE_NUMBER_INT) {
                    gid = OptionalLong.of(q.getLongValue());
                } else {
                    q.skipChildren();
                }
            });
            default -> p.skipChildren();
        }
    }

    /** One of {@code mounts}: kept when it is a bind mount (by type or by option, as runc decides). */
    private void mount(JsonParser p) throws IOException {
        expect(p, p.currentToken(), JsonToken.START_OBJECT, "mount");
        String type = "";
        String source = "";
        String destination = "";
        List<String> options = new ArrayList<>();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken value = p.nextToken();
            switch (name) {
                case "type" -> type = text(p, value, "mount type");
                case "source" -> source = text(p, value, "mount source");
                case "destination" -> destination = text(p, value, "mount destination");
                case "options" -> array(p, value, "mount options", q -> {
                    // Only the few that decide a bind are looked at; none is kept.
                    String option = text(q, q.currentToken(), "mount option");
                    if (option.equals("bind") || option.equals("rbind") || option.equals("ro")) {
                        options.add(option);
                    }
                });
                default -> p.skipChildren();
            }
        }
        boolean bind = type.equals("bind") || options.contains("bind") || options.contains("rbind");
        if (bind) {
            binds.add(new ContainerInfo.Mount("bind", keep(source, "a bind mount's source"),
                    keep(destination, "a bind mount's destination"), !options.contains("ro")));
        }
    }

    /**
     * The CRI's own annotations the agent reads, by name (a pod may pass others through under the
     * same prefix, of any size: never kept), and CDI's device requests.
     */
    private void annotation(JsonParser p, String name, JsonToken value) throws IOException {
        if (value != JsonToken.VALUE_STRING || !(CRI_ANNOTATIONS.contains(name) || name.startsWith("cdi.k8s.io/"))) {
            p.skipChildren();
            return;
        }
        annotations.put(keep(name, "an annotation's name"), keep(p.getText(), "annotation " + Printable.of(name)));
    }

    private void device(JsonParser p) throws IOException {
        expect(p, p.currentToken(), JsonToken.START_OBJECT, "device");
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken value = p.nextToken();
            if (name.equals("path") && value == JsonToken.VALUE_STRING) {
                nvidiaDevices |= GpuRequest.isNvidiaDeviceNode(p.getText());
            } else {
                p.skipChildren();
            }
        }
    }

    @FunctionalInterface
    private interface Field {
        void read(JsonParser p, String name, JsonToken value) throws IOException;
    }

    @FunctionalInterface
    private interface Item {
        void read(JsonParser p) throws IOException;
    }

    /** An object's fields, each handed over positioned on its value; {@code null} counts as empty. */
    private static void object(JsonParser p, JsonToken value, String what, Field field) throws IOException {
        if (value == JsonToken.VALUE_NULL) {
            return;
        }
        expect(p, value, JsonToken.START_OBJECT, what);
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            field.read(p, name, p.nextToken());
        }
    }

    /** An array's items, each handed over positioned on its first token; {@code null} counts as empty. */
    private static void array(JsonParser p, JsonToken value, String what, Item item) throws IOException {
        if (value == JsonToken.VALUE_NULL) {
            return;
        }
        expect(p, value, JsonToken.START_ARRAY, what);
        while (p.nextToken() != JsonToken.END_ARRAY) {
            if (p.currentToken() == null) {
                throw new IOException(what + ": truncated");
            }
            item.read(p);
        }
    }

    private static String text(JsonParser p, JsonToken value, String what) throws IOException {
        expect(p, value, JsonToken.VALUE_STRING, what);
        return p.getText();
    }

    private static void expect(JsonParser p, JsonToken actual, JsonToken expected, String what) throws IOException {
        if (actual != expected) {
            throw new IOException(what + ": expected " + expected + ", found " + actual + " at " + p.currentLocation().getCharOffset());
        }
    }
}
