package io.driveralias.agent.core;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One container as {@code GET /containers/{id}/json} describes it: the fields the agent
 * uses, including the overlay2 paths that docker-java's own model drops.
 *
 * @param pid        the init process on the host, 0 when not running
 * @param startedAt  when it (last) started; empty if it never did
 * @param graphData  {@code GraphDriver.Data}: MergedDir, UpperDir, LowerDir for overlay2
 * @param gpu        what it asks of a GPU runtime, which adds driver files no mount declares
 */
public record ContainerInfo(String id, String name, String image, Map<String, String> labels, boolean running,
                            int pid, Optional<Instant> startedAt, List<Mount> mounts, String graphDriver,
                            Map<String, String> graphData, boolean readOnlyRootfs, String user,
                            GpuRequest gpu) {

    /** A bind or volume mount: {@code source} on the host, {@code destination} in the container. */
    public record Mount(String type, String source, String destination, boolean readWrite) {
    }

    /** A container that asks nothing of a GPU runtime. */
    public ContainerInfo(String id, String name, String image, Map<String, String> labels, boolean running, int pid,
                         Optional<Instant> startedAt, List<Mount> mounts, String graphDriver,
                         Map<String, String> graphData, boolean readOnlyRootfs, String user) {
        this(id, name, image, labels, running, pid, startedAt, mounts, graphDriver, graphData, readOnlyRootfs, user,
                GpuRequest.NONE);
    }

    public ContainerInfo {
        labels = Map.copyOf(labels);
        mounts = List.copyOf(mounts);
        graphData = Map.copyOf(graphData);
    }

    public Optional<String> graphPath(String key) {
        return Optional.ofNullable(graphData.get(key)).filter(s -> !s.isEmpty());
    }
}
