package io.driveralias.agent.containerd;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.google.protobuf.Any;
import io.driveralias.agent.containerd.api.Container;
import io.driveralias.agent.json.CappedStrings;
import java.io.IOException;
import java.io.InputStream;
import java.util.Optional;

/**
 * The CRI plugin's own record of a pod sandbox, kept as JSON in the sandbox container's
 * extension {@code io.cri-containerd.sandbox.metadata}: containerd 1.6 and 1.7 note the pod's
 * runtime handler (its RuntimeClass's, e.g. {@code nvidia}) only there, not on the containers.
 * Only {@code Metadata.RuntimeHandler} is read, streaming, with bounded nesting.
 */
final class CriSandboxRecord {

    static final String EXTENSION = "io.cri-containerd.sandbox.metadata";
    private static final int MAX_HANDLER = 256;
    /** The record holds the pod's whole configuration (its annotations among it): every string cut short as it streams. */
    private static final int STRING_CAP = 1024;
    private static final JsonFactory JSON = JsonFactory.builder()
            .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(64).build())
            .disable(JsonFactory.Feature.CANONICALIZE_FIELD_NAMES)
            .disable(JsonFactory.Feature.INTERN_FIELD_NAMES)
            .build();

    private CriSandboxRecord() {
    }

    /** The runtime handler of a sandbox container's CRI record; empty where there is none or it is not readable. */
    static Optional<String> runtimeHandler(Container sandbox) {
        Any record = sandbox.getExtensionsMap().get(EXTENSION);
        return record == null ? Optional.empty() : runtimeHandler(record.getValue().newInput());
    }

    /** The runtime handler in a sandbox's CRI record (its JSON, as it streams); empty where there is none or it is not readable. */
    static Optional<String> runtimeHandler(InputStream json) {
        try (JsonParser p = JSON.createParser(new CappedStrings(json, STRING_CAP))) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return Optional.empty();
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken value = p.nextToken();
                if (name.equals("Metadata") && value == JsonToken.START_OBJECT) {
                    return handler(p);
                }
                p.skipChildren();
            }
            return Optional.empty();
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    private static Optional<String> handler(JsonParser p) throws IOException {
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken value = p.nextToken();
            if (name.equals("RuntimeHandler") && value == JsonToken.VALUE_STRING) {
                String handler = p.getText();
                return handler.isEmpty() || handler.length() > MAX_HANDLER || CappedStrings.isCut(handler) ? Optional.empty()
                        : Optional.of(handler);
            }
            p.skipChildren();
        }
        return Optional.empty();
    }
}
