package io.driveralias.agent.docker;

import static io.driveralias.agent.docker.JsonReading.item;
import static io.driveralias.agent.docker.JsonReading.text;
import static io.driveralias.agent.docker.JsonReading.texts;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.driveralias.agent.core.GpuRequest;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * What the agent reads of a container's {@code HostConfig} (or of Docker's own
 * {@code hostconfig.json}): {@code readOnlyRootfs} is empty where it was not a boolean; the
 * runtime as named ("" for the daemon's default); whether a device request asks for NVIDIA's
 * GPUs; whether NVIDIA's device nodes are given to it.
 */
record HostSettings(Optional<Boolean> readOnlyRootfs, String runtime, boolean deviceRequest, boolean deviceNodes) {

    static final HostSettings NONE = new HostSettings(Optional.empty(), "", false, false);

    /** The object that {@code start} opens; anything else is no settings at all. */
    static HostSettings read(JsonParser p, JsonToken start) throws IOException {
        if (start != JsonToken.START_OBJECT) {
            p.skipChildren();
            return NONE;
        }
        Optional<Boolean> readOnly = Optional.empty();
        String runtime = "";
        boolean deviceRequest = false;
        boolean deviceNodes = false;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            JsonToken value = p.nextToken();
            switch (field) {
                case "ReadonlyRootfs" -> readOnly = value.isBoolean() ? Optional.of(value == JsonToken.VALUE_TRUE) : Optional.empty();
                case "Runtime" -> runtime = text(p, value);
                case "DeviceRequests" -> deviceRequest = anyGpuDeviceRequest(p, value);
                case "Devices" -> deviceNodes = anyNvidiaDevice(p, value);
                default -> p.skipChildren();
            }
        }
        return new HostSettings(readOnly, runtime, deviceRequest, deviceNodes);
    }

    /** Whether a device request asks for NVIDIA's GPUs (see {@link GpuRequest#isGpuDeviceRequest}). */
    private static boolean anyGpuDeviceRequest(JsonParser p, JsonToken start) throws IOException {
        if (start != JsonToken.START_ARRAY) {
            p.skipChildren();
            return false;
        }
        boolean any = false;
        for (JsonToken t = p.nextToken(); item(t); t = p.nextToken()) {
            if (t != JsonToken.START_OBJECT) {
                p.skipChildren();
                continue;
            }
            String driver = "";
            List<List<String>> capabilities = new ArrayList<>();
            List<String> deviceIds = List.of();
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                JsonToken value = p.nextToken();
                switch (field) {
                    case "Driver" -> driver = text(p, value);
                    case "DeviceIDs" -> deviceIds = texts(p, value);
                    case "Capabilities" -> capabilities = capabilitySets(p, value);
                    default -> p.skipChildren();
                }
            }
            any |= GpuRequest.isGpuDeviceRequest(driver, capabilities, deviceIds);
        }
        return any;
    }

    /** {@code [["gpu"], ["compute", "utility"]]}: each set a list of strings. */
    private static List<List<String>> capabilitySets(JsonParser p, JsonToken start) throws IOException {
        if (start != JsonToken.START_ARRAY) {
            p.skipChildren();
            return List.of();
        }
        List<List<String>> sets = new ArrayList<>();
        for (JsonToken t = p.nextToken(); item(t); t = p.nextToken()) {
            sets.add(texts(p, t));
        }
        return sets;
    }

    private static boolean anyNvidiaDevice(JsonParser p, JsonToken start) throws IOException {
        if (start != JsonToken.START_ARRAY) {
            p.skipChildren();
            return false;
        }
        boolean any = false;
        for (JsonToken t = p.nextToken(); item(t); t = p.nextToken()) {
            if (t != JsonToken.START_OBJECT) {
                p.skipChildren();
                continue;
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                JsonToken value = p.nextToken();
                if (field.equals("PathOnHost")) {
                    any |= GpuRequest.isNvidiaDeviceNode(text(p, value));
                } else {
                    p.skipChildren();
                }
            }
        }
        return any;
    }
}
