package io.driveralias.agent.docker;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.JsonParser;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Docker's {@code /info}, as three engines of this project's CI answer it, and answers of the wrong shape. */
class DaemonInfoTest {

    private static DaemonInfo read(String json) throws IOException {
        try (JsonParser p = JsonReading.parser(new ByteArrayInputStream(json.getBytes(StandardCharsets.UTF_8)))) {
            return DaemonInfo.read(p);
        }
    }

    @Test
    void docker28WithTheContainerdImageStoreNamesItsSnapshotterAndItsContainerd() throws IOException {
        DaemonInfo info = read("""
                {"ID":"x","Containers":3,"Driver":"overlayfs","DriverStatus":[["driver-type","io.containerd.snapshotter.v1"]],
                 "Plugins":{"Volume":["local"]},"DefaultRuntime":"runc","DockerRootDir":"/var/lib/docker",
                 "Runtimes":{"runc":{"path":"runc"}},
                 "Containerd":{"Address":"/run/containerd/containerd.sock",
                               "Namespaces":{"Containers":"moby","Plugins":"plugins.moby"}}}""");

        assertThat(info.imageStore()).isTrue();
        assertThat(info.driver()).isEqualTo("overlayfs");
        assertThat(info.rootDir()).isEqualTo("/var/lib/docker");
        assertThat(info.containerdAddress()).isEqualTo("/run/containerd/containerd.sock");
        assertThat(info.containerdNamespace()).isEqualTo("moby");
    }

    @Test
    void docker20WithOverlay2SaysNothingOfContainerd() throws IOException {
        DaemonInfo info = read("""
                {"Driver":"overlay2","DriverStatus":[["Backing Filesystem","extfs"],["Supports d_type","true"],
                 ["Native Overlay Diff","true"],["userxattr","false"]],"DockerRootDir":"/var/lib/docker",
                 "DefaultRuntime":"nvidia"}""");

        assertThat(info.imageStore()).isFalse();
        assertThat(info.driver()).isEqualTo("overlay2");
        assertThat(info.defaultRuntime()).isEqualTo("nvidia");
        assertThat(info.containerdAddress()).isEmpty();
        assertThat(info.containerdNamespace()).isEmpty();
    }

    @Test
    void fieldsOfAnotherShapeCountAsAbsent() throws IOException {
        DaemonInfo info = read("""
                {"Driver":7,"DriverStatus":[["driver-type"],"io.containerd.snapshotter.v1",{"a":1},
                 ["driver-type","io.containerd.snapshotter.v1","extra"]],"DockerRootDir":["/x"],"DefaultRuntime":null,
                 "Containerd":{"Address":{"path":"/run/x.sock"},"Namespaces":["moby"]}}""");

        assertThat(info.driver()).isEmpty();
        assertThat(info.imageStore()).isFalse();
        assertThat(info.rootDir()).isEmpty();
        assertThat(info.defaultRuntime()).isEqualTo("runc");
        assertThat(info.containerdAddress()).isEmpty();
        assertThat(info.containerdNamespace()).isEmpty();
    }
}
