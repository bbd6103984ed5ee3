package io.driveralias.agent.kube;

import io.driveralias.agent.core.ActionKind;
import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.core.FailureReason;
import io.driveralias.agent.core.LinkAction;
import io.driveralias.agent.core.PodRef;
import io.driveralias.agent.repair.LinkResult;
import io.driveralias.agent.repair.LinkStatus;
import io.driveralias.agent.repair.Problem;
import io.driveralias.agent.repair.RepairReport;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** Containers and repair reports as the repair side would hand them over. */
final class Reports {

    static final String V = "535.104.05";
    static final String LIB = "/usr/lib/x86_64-linux-gnu";

    private Reports() {
    }

    static ContainerRef container(String namespace, String pod, String container) {
        return new ContainerRef("c0ffee" + Integer.toHexString((namespace + pod + container).hashCode()),
                "k8s_" + container + "_" + pod, "nvcr.io/nvidia/pytorch:24.01",
                Optional.of(new PodRef(namespace, pod, "uid-" + namespace + "-" + pod, container)));
    }

    static ContainerRef withoutPod(String name) {
        return new ContainerRef("deadbeef" + name, name, "ubuntu:22.04", Optional.empty());
    }

    static LinkResult created(String dir, String soname, String file) {
        return new LinkResult(new LinkAction(ActionKind.CREATE, dir, soname, file, ""), LinkStatus.APPLIED, null, "");
    }

    static LinkResult replaced(String dir, String soname, String file, String was) {
        return new LinkResult(new LinkAction(ActionKind.REPLACE, dir, soname, file, was), LinkStatus.APPLIED, null, "");
    }

    static LinkResult failedLink(String dir, String soname, String file, FailureReason reason) {
        return new LinkResult(new LinkAction(ActionKind.CREATE, dir, soname, file, ""), LinkStatus.FAILED, reason,
                "refused");
    }

    /** libcuda.so.1 and libnvidia-ml.so.1 created. */
    static RepairReport repaired() {
        return new RepairReport(Optional.of(V), List.of(
                created(LIB, "libcuda.so.1", "libcuda.so." + V),
                created(LIB, "libnvidia-ml.so.1", "libnvidia-ml.so." + V)), List.of());
    }

    /** {@code n} aliases created, named {@code libnvidia-<i>.so.1}. */
    static RepairReport repairedMany(int n) {
        List<LinkResult> links = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            links.add(created(LIB, "libnvidia-" + i + ".so.1", "libnvidia-" + i + ".so." + V));
        }
        return new RepairReport(Optional.of(V), links, List.of());
    }

    static RepairReport readOnly() {
        return new RepairReport(Optional.of(V), List.of(
                failedLink(LIB, "libcuda.so.1", "libcuda.so." + V, FailureReason.READ_ONLY),
                failedLink(LIB, "libnvidia-ml.so.1", "libnvidia-ml.so." + V, FailureReason.READ_ONLY)), List.of());
    }

    static RepairReport problem(FailureReason reason, String path) {
        return new RepairReport(Optional.of(V), List.of(), List.of(new Problem(path, reason, "found")));
    }
}
