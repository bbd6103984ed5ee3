package io.driveralias.agent.nri;

import java.util.List;
import java.util.Objects;

/** A container's bind mount as NRI passes it (OCI: destination in the container, host source, options). */
public record NriMount(String destination, String type, String source, List<String> options) {

    public NriMount {
        Objects.requireNonNull(destination, "destination");
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(source, "source");
        options = List.copyOf(options);
    }

    public boolean readOnly() {
        return options.contains("ro");
    }
}
