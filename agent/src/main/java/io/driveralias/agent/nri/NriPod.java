package io.driveralias.agent.nri;

import java.util.Objects;

/**
 * A pod as the runtime's NRI describes it, reduced to what the agent uses. A string over its
 * bound came as "" and is counted in {@code truncated}.
 *
 * @param runtimeHandler the CRI runtime handler the pod runs under ("" for the default)
 * @param truncated      how many strings were longer than the decoder keeps (each kept as "")
 */
public record NriPod(String id, String name, String uid, String namespace, String runtimeHandler, int truncated) {

    /** A pod the runtime did not describe (a Synchronize's container whose pod it did not list). */
    public static final NriPod UNKNOWN = new NriPod("", "", "", "", "", 0);

    public NriPod {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(uid, "uid");
        Objects.requireNonNull(namespace, "namespace");
        Objects.requireNonNull(runtimeHandler, "runtimeHandler");
    }

    /** Nothing was left out. */
    public boolean complete() {
        return truncated == 0;
    }
}
