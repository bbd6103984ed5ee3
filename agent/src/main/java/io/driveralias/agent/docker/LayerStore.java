package io.driveralias.agent.docker;

import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.fs.KernelFiles;
import io.driveralias.agent.fs.Libc;
import io.driveralias.agent.fs.OpenFlags;
import io.driveralias.agent.fs.StreamedFile;
import io.driveralias.agent.live.ContainerRuntimeException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * What Docker's own data directory says of a created container, read without asking the
 * daemon: its overlay2 layer (the cache id in {@code image/overlay2/layerdb/mounts/<id>/mount-id},
 * hence {@code overlay2/<cache-id>/diff} and {@code merged}), and its {@code hostconfig.json} and
 * {@code config.v2.json} (both written before the create event). Host files, written by the
 * daemon; each read bounded, the last component never followed. In containerd's image store
 * (Docker 29's default), a created container's layers are its snapshot in Docker's containerd.
 */
final class LayerStore {

    private static final Pattern ID = Pattern.compile("[0-9a-f]{64}");
    private static final Pattern CACHE_ID = Pattern.compile("[0-9a-zA-Z_-]{1,128}");
    /** Docker's own bound on a request body is far below; past this, the file is not Docker's. */
    private static final long MAX_CONTAINER_FILE = 64L << 20;
    /** overlay2 stacks at most 128 layers (500 with its newer limit): short links of 28 characters. */
    private static final int MAX_LOWER = 64 << 10;
    private static final Pattern LOWER = Pattern.compile("l/[A-Z0-9]{26}(:l/[A-Z0-9]{26}){0,1000}");

    private LayerStore() {
    }

    /**
     * A created container's layers, without asking the daemon: overlay2's from Docker's data
     * directory, or its snapshot in containerd's image store ({@link #imageStoreLayers}). Empty
     * with any other storage.
     */
    static Optional<ContainerInfo.OverlayLayers> createdLayers(DaemonInfo d, Optional<DockerContainerd> c, String id)
            throws ContainerRuntimeException {
        if (d.driver().equals("overlay2")) {
            return overlayPaths(d.rootDir(), id).flatMap(paths -> ContainerInspectParser.overlay("overlay2", paths));
        }
        return d.imageStore() ? imageStoreLayers(d, c, id, d.driver()) : Optional.empty();
    }

    /**
     * The layers of a created container in containerd's image store: its snapshot (key: its id) in
     * Docker's containerd {@code c}, and where Docker will mount its root. Empty elsewhere, or where
     * the agent does not reach Docker's containerd or see where Docker mounts roots.
     */
    static Optional<ContainerInfo.OverlayLayers> imageStoreLayers(DaemonInfo d, Optional<DockerContainerd> c, String id,
                                                               String snapshotter) throws ContainerRuntimeException {
        if (!d.imageStore() || !snapshotter.equals(d.driver()) || c.isEmpty()) {
            return Optional.empty();
        }
        Optional<String> merged = snapshotRoot(d.rootDir(), snapshotter, id);
        if (merged.isEmpty()) {
            return Optional.empty();
        }
        return c.get().layers(snapshotter, id).map(l -> new ContainerInfo.OverlayLayers(l.upperDir(), l.lowerDir(), merged.get()));
    }

    /**
     * {@code UpperDir}, {@code MergedDir} and, where its {@code lower} file says, {@code LowerDir}
     * of the container's overlay2 layer: what inspect would report, without asking the daemon.
     */
    static Optional<Map<String, String>> overlayPaths(String rootDir, String containerId) {
        if (!ID.matcher(containerId).matches()) {
            return Optional.empty();
        }
        return read(rootDir + "/image/overlay2/layerdb/mounts/" + containerId, "mount-id", 256)
                .map(bytes -> new String(bytes, StandardCharsets.UTF_8).trim()).filter(c -> CACHE_ID.matcher(c).matches())
                .map(cache -> {
                    Map<String, String> paths = new java.util.LinkedHashMap<>();
                    paths.put("UpperDir", rootDir + "/overlay2/" + cache + "/diff");
                    paths.put("MergedDir", rootDir + "/overlay2/" + cache + "/merged");
                    lowerDir(rootDir, cache).ifPresent(lower -> paths.put("LowerDir", lower));
                    return Map.copyOf(paths);
                });
    }

    /**
     * The layer's image layers, top first, from overlay2's {@code lower} file ({@code l/ID:l/ID},
     * the short links Docker keeps in {@code overlay2/l}): absolute paths, as overlayfs takes them.
     * Empty if the file is missing or not of that exact shape.
     */
    private static Optional<String> lowerDir(String rootDir, String cache) {
        return read(rootDir + "/overlay2/" + cache, "lower", MAX_LOWER)
                .map(bytes -> new String(bytes, StandardCharsets.US_ASCII).trim())
                .filter(text -> LOWER.matcher(text).matches())
                .map(text -> java.util.Arrays.stream(text.split(":")).map(l -> rootDir + "/overlay2/" + l)
                        .collect(java.util.stream.Collectors.joining(":")));
    }

    /**
     * Where Docker mounts, at its start, the root of a container kept in containerd's image store:
     * {@code <data-root>/rootfs/<snapshotter>/<id>}, made when the start begins and removed when
     * the container stops. Empty where the agent does not see Docker's {@code rootfs} directory:
     * without it a root being mounted could not be told from one that is not, and the container's
     * writable layer is only ever written while it is not.
     */
    static Optional<String> snapshotRoot(String rootDir, String snapshotter, String containerId) {
        if (!ID.matcher(containerId).matches() || !CACHE_ID.matcher(snapshotter).matches()) {
            return Optional.empty();
        }
        try {
            Libc.close(Libc.openHost(rootDir + "/rootfs", OpenFlags.O_PATH | OpenFlags.O_DIRECTORY));
        } catch (ErrnoException e) {
            return Optional.empty();
        }
        return Optional.of(rootDir + "/rootfs/" + snapshotter + "/" + containerId);
    }

    /** The container's {@code hostconfig.json}, as a stream (the caller closes it). */
    static Optional<InputStream> hostConfig(String rootDir, String containerId) {
        return containerFile(rootDir, containerId, "hostconfig.json");
    }

    /** The container's {@code config.v2.json} (its {@code Config}: environment, labels), as a stream. */
    static Optional<InputStream> containerConfig(String rootDir, String containerId) {
        return containerFile(rootDir, containerId, "config.v2.json");
    }

    /**
     * One of the container's files, streamed: its owner decides how large it is (megabytes of
     * environment), and the parser keeps only what it uses.
     */
    private static Optional<InputStream> containerFile(String rootDir, String containerId, String name) {
        if (!ID.matcher(containerId).matches()) {
            return Optional.empty();
        }
        try {
            int dir = Libc.openHost(rootDir + "/containers/" + containerId, OpenFlags.O_PATH | OpenFlags.O_DIRECTORY);
            try {
                return Optional.of(StreamedFile.open(dir, name, MAX_CONTAINER_FILE));
            } finally {
                Libc.close(dir);
            }
        } catch (ErrnoException e) {
            return Optional.empty();
        }
    }

    private static Optional<byte[]> read(String directory, String name, int max) {
        try {
            int dir = Libc.openHost(directory, OpenFlags.O_PATH | OpenFlags.O_DIRECTORY);
            try {
                return Optional.of(KernelFiles.readSized(dir, name, max));
            } finally {
                Libc.close(dir);
            }
        } catch (ErrnoException e) {
            return Optional.empty();
        }
    }
}
