package io.driveralias.agent.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ContainerScopeTest {

    @ParameterizedTest(name = "{0} ~ {1}: {2}")
    @CsvSource({
            "nvcr.io/*, nvcr.io/nvidia/pytorch:23.10-py3, true",
            "*/cdsw/ml-runtime-*, docker.repository.cloudera.com/cdsw/ml-runtime-jupyterlab-python3.9:2023.08, true",
            "*:latest, busybox:1.36, false",
            "ubuntu:2?.04, ubuntu:22.04, true",
            "ubuntu:2?.04, ubuntu:2.04, false",
            "a.b, axb, false",
    })
    void globs(String glob, String image, boolean matches) {
        assertThat(new Glob(glob).matches(image)).isEqualTo(matches);
    }

    private static ContainerInfo.Builder image(String image) {
        return ContainerInfo.builder("c0ffee").image(image);
    }

    @Test
    void podSandboxesAreAlwaysOutOfScope() {
        ContainerScope scope = new ContainerScope(List.of(), List.of());

        assertThat(scope.exclusion(image("registry.k8s.io/pause:3.9").sandbox(true).build())).contains("pod sandbox");
        assertThat(scope.exclusion(image("registry.k8s.io/pause:3.9").build())).isEmpty();
    }

    @Test
    void excludeWinsOverInclude() {
        ContainerScope scope = new ContainerScope(List.of("nvcr.io/*"), List.of("*:debug"));

        assertThat(scope.exclusion(image("nvcr.io/nvidia/cuda:12.2.0-base").build())).isEmpty();
        assertThat(scope.exclusion(image("nvcr.io/nvidia/cuda:debug").build())).isPresent();
        assertThat(scope.exclusion(image("docker.io/library/ubuntu:22.04").build())).contains("image matches no --include-image");
    }

    @Test
    void podFromKubeletLabels() {
        Map<String, String> labels = Map.of(
                "io.kubernetes.pod.namespace", "team-a",
                "io.kubernetes.pod.name", "session-x1",
                "io.kubernetes.pod.uid", "0f6c",
                "io.kubernetes.container.name", "engine");

        assertThat(ContainerScope.podOf(labels)).contains(new PodRef("team-a", "session-x1", "0f6c", "engine"));
        assertThat(ContainerScope.podOf(Map.of())).isEmpty();
    }
}
