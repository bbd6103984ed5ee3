package io.driveralias.agent.core;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One container as its runtime describes it, in the agent's own words: the same record for
 * Docker and containerd, so that everything after the runtime's adapter is shared.
 *
 * @param labels    the runtime's labels (the kubelet's {@code io.kubernetes.pod.*} among them)
 * @param sandbox   a pod's sandbox ("pause") container: never a GPU container
 * @param running   its process exists (for containerd also a task created and not yet started)
 * @param pid       that process on the host, 0 when there is none
 * @param startedAt the runtime's record of when it (last) started; empty if it never did
 * @param mounts    the mounts its configuration declares (not what a runtime's hook adds)
 * @param storage   the runtime's name for its storage ({@code overlay2}, {@code overlayfs}, {@code vfs}), for messages
 * @param overlay   its root's overlay layers, where the runtime stores it as an overlay
 * @param gpu       what it asks of the GPU runtime, which adds driver files no mount declares
 * @param startBeforeProcess whether {@code startedAt} is no later than the moment its process was
 *                  made (the kernel's record of that moment, or a runtime that stamps a start before
 *                  it makes the process): aliases written before it were there at its first
 *                  instruction. False where the runtime stamps it after the process started
 *                  (Docker before 26, when the agent did not see the process itself)
 */
public record ContainerInfo(String id, String name, String image, Map<String, String> labels, boolean sandbox,
                            boolean running, int pid, Optional<Instant> startedAt, List<Mount> mounts,
                            String storage, Optional<OverlayLayers> overlay, boolean readOnlyRootfs, String user,
                            GpuRequest gpu, boolean startBeforeProcess) {

    /** A bind or volume mount: {@code source} on the host, {@code destination} in the container. */
    public record Mount(String type, String source, String destination, boolean readWrite) {
    }

    /**
     * The layers of a root kept as an overlay: {@code upperDir} (its writable layer),
     * {@code lowerDir} (the image's layers, colon-separated, top first, as overlayfs takes them)
     * and {@code mergedDir}, where the runtime mounts the overlay when the container starts;
     * {@code taskDir}, where the runtime notes the container's process once it made it
     * ({@code init.pid} in containerd's task bundle), empty where it does not say. A path the
     * runtime did not tell is empty.
     */
    public record OverlayLayers(String upperDir, String lowerDir, String mergedDir, String taskDir) {
        public OverlayLayers(String upperDir, String lowerDir, String mergedDir) {
            this(upperDir, lowerDir, mergedDir, "");
        }
    }

    public ContainerInfo {
        labels = Map.copyOf(labels);
        mounts = List.copyOf(mounts);
    }

    public static Builder builder(String id) {
        return new Builder(id);
    }

    public Builder toBuilder() {
        return new Builder(id).name(name).image(image).labels(labels).sandbox(sandbox).running(running).pid(pid)
                .startedAt(startedAt).mounts(mounts).storage(storage).overlay(overlay).readOnlyRootfs(readOnlyRootfs)
                .user(user).gpu(gpu).startBeforeProcess(startBeforeProcess);
    }

    /** Adapters and tests name only what they know; the rest stays empty. */
    public static final class Builder {
        private final String id;
        private String name = "";
        private String image = "";
        private Map<String, String> labels = Map.of();
        private boolean sandbox;
        private boolean running;
        private int pid;
        private Optional<Instant> startedAt = Optional.empty();
        private List<Mount> mounts = List.of();
        private String storage = "";
        private Optional<OverlayLayers> overlay = Optional.empty();
        private boolean readOnlyRootfs;
        private String user = "";
        private GpuRequest gpu = GpuRequest.NONE;
        private boolean startBeforeProcess = true;

        private Builder(String id) {
            this.id = id;
        }

        public Builder name(String value) {
            name = value;
            return this;
        }

        public Builder image(String value) {
            image = value;
            return this;
        }

        public Builder labels(Map<String, String> value) {
            labels = value;
            return this;
        }

        public Builder sandbox(boolean value) {
            sandbox = value;
            return this;
        }

        public Builder running(boolean value) {
            running = value;
            return this;
        }

        public Builder pid(int value) {
            pid = value;
            return this;
        }

        public Builder startedAt(Optional<Instant> value) {
            startedAt = value;
            return this;
        }

        public Builder mounts(List<Mount> value) {
            mounts = value;
            return this;
        }

        public Builder storage(String value) {
            storage = value;
            return this;
        }

        public Builder overlay(Optional<OverlayLayers> value) {
            overlay = value;
            return this;
        }

        public Builder readOnlyRootfs(boolean value) {
            readOnlyRootfs = value;
            return this;
        }

        public Builder user(String value) {
            user = value;
            return this;
        }

        public Builder gpu(GpuRequest value) {
            gpu = value;
            return this;
        }

        public Builder startBeforeProcess(boolean value) {
            startBeforeProcess = value;
            return this;
        }

        public ContainerInfo build() {
            return new ContainerInfo(id, name, image, labels, sandbox, running, pid, startedAt, mounts, storage, overlay,
                    readOnlyRootfs, user, gpu, startBeforeProcess);
        }
    }
}
