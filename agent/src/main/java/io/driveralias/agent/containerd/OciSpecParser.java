package io.driveralias.agent.containerd;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.GpuRequest;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * Reads the few fields the agent uses from an OCI runtime spec (JSON, as containerd stores it in
 * a container's record), streaming: nothing else is kept, whatever the spec holds. Each kept part
 * is bounded (entries, lengths, nesting), so a container chosen by its owner costs the agent a
 * few KiB. Anything that is not JSON of the expected shape is an {@link IOException}.
 */
final class OciSpecParser {

    static final int MAX_ENTRIES = 1024;
    static final int MAX_TEXT = 4096;
    private static final JsonFactory JSON = JsonFactory.builder()
            .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(64).maxStringLength(ContainerdClient.MAX_MESSAGE)
                    .maxNumberLength(32).build())
            .build();

    private final List<String> gpuEnvironment = new ArrayList<>();
    private final List<ContainerInfo.Mount> binds = new ArrayList<>();
    private final Map<String, String> annotations = new LinkedHashMap<>();
    private OptionalLong uid = OptionalLong.empty();
    private OptionalLong gid = OptionalLong.empty();
    private boolean nvidiaDevices;
    private boolean readOnlyRoot;

    private OciSpecParser() {
    }

    static OciSpec parse(InputStream json) throws IOException {
        OciSpecParser spec = new OciSpecParser();
        try (JsonParser p = JSON.createParser(json)) {
            spec.root(p);
        }
        return new OciSpec(spec.gpuEnvironment, spec.uid, spec.gid, spec.binds, spec.annotations, spec.nvidiaDevices,
                spec.readOnlyRoot);
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
                String entry = q.getText();
                if (entry.startsWith("NVIDIA_") && entry.length() <= MAX_TEXT && gpuEnvironment.size() < MAX_ENTRIES) {
                    gpuEnvironment.add(entry);
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
                    String option = text(q, q.currentToken(), "mount option");
                    if (options.size() < MAX_ENTRIES) {
                        options.add(option);
                    }
                });
                default -> p.skipChildren();
            }
        }
        boolean bind = type.equals("bind") || options.contains("bind") || options.contains("rbind");
        if (bind && binds.size() < MAX_ENTRIES && source.length() <= MAX_TEXT && destination.length() <= MAX_TEXT) {
            binds.add(new ContainerInfo.Mount("bind", source, destination, !options.contains("ro")));
        }
    }

    private void annotation(JsonParser p, String name, JsonToken value) throws IOException {
        if (value != JsonToken.VALUE_STRING || !(name.startsWith("io.kubernetes.cri.") || name.startsWith("cdi.k8s.io/"))) {
            p.skipChildren();
            return;
        }
        String text = p.getText();
        if (name.length() <= MAX_TEXT && text.length() <= MAX_TEXT && annotations.size() < MAX_ENTRIES) {
            annotations.put(name, text);
        }
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
