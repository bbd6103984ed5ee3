package io.driveralias.agent.containerd;

import java.util.Map;
import java.util.Optional;

/**
 * What the agent keeps of a containerd container's record ({@code Containers.Get}): a few
 * bounded fields, read as the record streams in by {@link ContainerRecordReader}. The record
 * itself can hold megabytes of its owner's environment, labels and annotations; this holds what
 * the agent uses, a few KiB.
 *
 * @param labels        the labels the agent reads: the kubelet's ({@code io.kubernetes.*}) and the CRI's
 *                      ({@code io.cri-containerd.*}), each short
 * @param runtimeBinary the OCI runtime binary its runtime options name (runc's {@code BinaryName})
 * @param cri           the CRI's own record of it, which only the CRI writes ({@code ctr} cannot)
 * @param sandboxHandler for a pod's sandbox, the runtime handler the CRI recorded for the pod
 */
record ContainerRecord(String id, Map<String, String> labels, String image, String runtimeName,
                       Optional<String> runtimeBinary, OciSpec spec, String snapshotter, String snapshotKey, CriKind cri,
                       Optional<String> sandboxHandler) {

    /** Which of the CRI's own records the container carries (extensions {@code io.cri-containerd.*.metadata}). */
    enum CriKind { NONE, CONTAINER, SANDBOX }

    ContainerRecord {
        labels = Map.copyOf(labels);
    }
}
