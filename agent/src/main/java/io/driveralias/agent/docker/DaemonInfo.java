package io.driveralias.agent.docker;

import static io.driveralias.agent.docker.JsonReading.item;
import static io.driveralias.agent.docker.JsonReading.text;
import static io.driveralias.agent.docker.JsonReading.texts;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.util.List;

/**
 * What the agent reads of Docker's {@code GET /info}: where its data is ({@code DockerRootDir}),
 * how it stores containers ({@code Driver}: {@code overlay2}, or with the containerd image store
 * the snapshotter, {@code overlayfs}, which {@code DriverStatus} says with
 * {@code driver-type = io.containerd.snapshotter.v1}), the runtime of a container that names none,
 * and (API 1.46, Docker 27, and later) the containerd it runs its containers on and its
 * namespace there. Everything else is skipped unread; a field of another type counts as absent.
 */
record DaemonInfo(String rootDir, String driver, String driverType, String defaultRuntime, String containerdAddress,
                  String containerdNamespace) {

    static final DaemonInfo UNKNOWN = new DaemonInfo("", "", "", "runc", "", "");
    /** The {@code driver-type} of a snapshotter in {@code DriverStatus}: Docker keeps its images in containerd. */
    static final String SNAPSHOTTER = "io.containerd.snapshotter.v1";

    /** Whether Docker keeps its images and containers' layers in containerd (Docker 29's default on a new install). */
    boolean imageStore() {
        return driverType.equals(SNAPSHOTTER);
    }

    /** The object of the whole answer, the parser just created on it. */
    static DaemonInfo read(JsonParser p) throws IOException {
        JsonReading.requireObject(p, p.nextToken());
        String[] f = {"", "", "", "runc", "", ""};
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            JsonToken value = p.nextToken();
            switch (field) {
                case "DockerRootDir" -> f[0] = text(p, value);
                case "Driver" -> f[1] = text(p, value);
                case "DriverStatus" -> f[2] = driverType(p, value);
                case "DefaultRuntime" -> f[3] = orDefault(text(p, value), "runc");
                case "Containerd" -> JsonReading.fields(p, value, (name, v) -> {
                    switch (name) {
                        case "Address" -> f[4] = text(p, v);
                        case "Namespaces" -> JsonReading.fields(p, v, (ns, nv) -> {
                            if (ns.equals("Containers")) {
                                f[5] = text(p, nv);
                            } else {
                                p.skipChildren();
                            }
                        });
                        default -> p.skipChildren();
                    }
                });
                default -> p.skipChildren();
            }
        }
        return new DaemonInfo(f[0], f[1], f[2], f[3], f[4], f[5]);
    }

    /** {@code [["driver-type", "io.containerd.snapshotter.v1"], ...]}: the value of the pair named driver-type. */
    private static String driverType(JsonParser p, JsonToken start) throws IOException {
        if (start != JsonToken.START_ARRAY) {
            p.skipChildren();
            return "";
        }
        String type = "";
        for (JsonToken t = p.nextToken(); item(t); t = p.nextToken()) {
            List<String> pair = texts(p, t);
            if (pair.size() == 2 && pair.getFirst().equals("driver-type")) {
                type = pair.get(1);
            }
        }
        return type;
    }

    private static String orDefault(String value, String otherwise) {
        return value.isEmpty() ? otherwise : value;
    }
}
