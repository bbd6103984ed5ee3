package io.driveralias.agent.nri;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A container as the runtime's NRI describes it, reduced to what the agent uses: its identity,
 * state and process, the kubelet's labels ({@code io.kubernetes.*}), the CRI's and CDI's
 * annotations ({@code io.kubernetes.cri.*}, {@code cdi.k8s.io/*}), the environment entries that
 * start with {@code NVIDIA_} (as "NAME=value"), its bind mounts, whether the runtime gives it any
 * device under {@code /dev/nvidia}, and whether it gives it one of NVIDIA's CDI devices (NRI 0.12
 * passes a container's CDI devices, {@code nvidia.com/gpu=0}). Everything else in the runtime's
 * message was skipped unread.
 *
 * @param id         the container's id: "" when the runtime's is no container id by containerd's
 *                   rules (its characters, at most 76 of them): such a container is nobody's to key
 * @param image      its image's reference (NRI 0.12's {@code Container.image.name}, else the CRI's
 *                   {@code io.kubernetes.cri.image-name} annotation), "" where neither says
 * @param pid        its process (its root is {@code /proc/<pid>/root}); 0 before the task exists
 * @param truncated  how many strings were longer than the decoder keeps (an identity field kept as
 *                   "", an entry or mount left out)
 * @param overBounds some entries were left out: a list or map held more than the decoder keeps, or
 *                   the message as a whole did
 */
public record NriContainer(String id, String podSandboxId, String name, String image, State state, int pid,
                           Map<String, String> labels,
                           Map<String, String> annotations, List<String> nvidiaEnv, List<NriMount> bindMounts,
                           boolean nvidiaDevice, boolean nvidiaCdiDevice, int truncated, boolean overBounds) {

    /** NRI's ContainerState, by its number on the wire. */
    public enum State {
        UNKNOWN, CREATED, PAUSED, RUNNING, STOPPED;

        static State of(long wire) {
            return wire > 0 && wire < values().length ? values()[(int) wire] : UNKNOWN;
        }
    }

    public NriContainer {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(podSandboxId, "podSandboxId");
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(image, "image");
        Objects.requireNonNull(state, "state");
        labels = Collections.unmodifiableMap(new LinkedHashMap<>(labels));
        annotations = Collections.unmodifiableMap(new LinkedHashMap<>(annotations));
        nvidiaEnv = List.copyOf(nvidiaEnv);
        bindMounts = List.copyOf(bindMounts);
    }

    /** Nothing was left out. */
    public boolean complete() {
        return truncated == 0 && !overBounds;
    }
}
