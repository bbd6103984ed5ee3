package io.driveralias.agent.docker;

import static io.driveralias.agent.docker.JsonReading.item;
import static io.driveralias.agent.docker.JsonReading.startsWithAny;
import static io.driveralias.agent.docker.JsonReading.text;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.json.DescriptionTooLarge;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * The two lists of a Docker container the agent reads, as they stream in: its environment (of
 * which NVIDIA's two variables alone are kept) and its mounts (bounded in number and length).
 */
final class ContainerLists {

    private static final List<String> GPU_VARIABLES = List.of("NVIDIA_VISIBLE_DEVICES=", "NVIDIA_DRIVER_CAPABILITIES=");
    /** Far more than any pod declares (Kubernetes' own validation allows a few hundred). */
    private static final int MAX_MOUNTS = 1024;

    private ContainerLists() {
    }

    /**
     * The environment's two NVIDIA variables the agent uses, the last of each; no other entry is
     * kept, and none is read past {@link JsonReading#STRING_CAP} bytes.
     */
    static List<String> gpuVariables(JsonParser p, JsonToken start) throws IOException {
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

    /** Docker's {@code Mounts}: type, source, destination and whether writable, at most {@link #MAX_MOUNTS}. */
    static List<ContainerInfo.Mount> mounts(JsonParser p, JsonToken start) throws IOException {
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
}
