package io.driveralias.agent.containerd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.driveralias.agent.containerd.api.Mount;
import io.driveralias.agent.core.ContainerInfo;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A Docker container's snapshot in containerd's image store, as {@code Snapshots.Mounts} gives it. */
class DockerNamespaceTest {

    private static Mount mount(String type, String... options) {
        return Mount.newBuilder().setType(type).setSource("overlay").addAllOptions(List.of(options)).build();
    }

    @Test
    void anOverlaySnapshotGivesItsWritableAndImageLayers() {
        // As containerd 2.1.9 answered for a container of Docker 28.5.2 (its -init layer on top of the image's).
        String snapshots = "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/";
        Mount overlay = mount("overlay", "workdir=" + snapshots + "3/work", "upperdir=" + snapshots + "3/fs",
                "lowerdir=" + snapshots + "2/fs:" + snapshots + "1/fs", "index=off");

        assertThat(DockerNamespace.overlay(List.of(overlay))).contains(
                new ContainerInfo.OverlayLayers(snapshots + "3/fs", snapshots + "2/fs:" + snapshots + "1/fs", ""));
    }

    @Test
    void anythingElseHasNoLayersToWriteInto() {
        assertThat(DockerNamespace.overlay(List.of())).isEmpty();
        assertThat(DockerNamespace.overlay(List.of(mount("bind", "rbind", "rw")))).isEmpty();
        assertThat(DockerNamespace.overlay(List.of(mount("overlay", "upperdir=/u", "lowerdir=/l"), mount("bind")))).isEmpty();
        assertThat(DockerNamespace.overlay(List.of(mount("overlay", "upperdir=u", "lowerdir=/l")))).as("relative").isEmpty();
        assertThat(DockerNamespace.overlay(List.of(mount("overlay", "lowerdir=/l")))).isEmpty();
    }

    @Test
    void aNamespaceThatIsNoNameIsRefused() {
        assertThatThrownBy(() -> DockerNamespace.open("unix:///run/containerd/containerd.sock", "../moby"))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
