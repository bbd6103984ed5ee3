package io.driveralias.agent.containerd;

import io.driveralias.agent.containerd.api.Container;
import io.driveralias.agent.containerd.api.Envelope;
import io.driveralias.agent.containerd.api.GetContainerResponse;
import io.driveralias.agent.containerd.api.Mount;
import io.driveralias.agent.containerd.api.MountsResponse;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

/** The payloads recorded from a real containerd (src/test/resources/containerd/README.md). */
final class Fixtures {

    /** The CRI container's id and its pod's sandbox's, in the recorded payloads. */
    static final String CRI_CONTAINER = "4938a449456fcc10596a88646066c10aa70707f78586e4baf996aed359084f19";
    static final String CRI_SANDBOX = "95f2c89ff82672913d79a119d40669f0e91ae13eee11b112920af45f2e1108a3";

    private Fixtures() {
    }

    static byte[] bytes(String name) {
        try (InputStream in = Fixtures.class.getResourceAsStream("/containerd/" + name)) {
            if (in == null) {
                throw new IllegalStateException("no fixture " + name);
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static Container container(String name) {
        try {
            return GetContainerResponse.parseFrom(bytes(name)).getContainer();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static List<Mount> criContainerMounts() {
        try {
            return MountsResponse.parseFrom(bytes("cri-container-mounts.bin")).getMountsList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static List<Envelope> events() {
        try (InputStream in = Fixtures.class.getResourceAsStream("/containerd/events.bin")) {
            List<Envelope> events = new ArrayList<>();
            for (Envelope e = Envelope.parseDelimitedFrom(in); e != null; e = Envelope.parseDelimitedFrom(in)) {
                events.add(e);
            }
            return events;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
