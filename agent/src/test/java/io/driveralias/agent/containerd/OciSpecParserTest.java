package io.driveralias.agent.containerd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.testing.SeededCases;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.OptionalLong;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

class OciSpecParserTest {

    private static OciSpec parse(String json) throws IOException {
        return OciSpecParser.parse(new ByteArrayInputStream(json.getBytes(StandardCharsets.UTF_8)));
    }

    private static byte[] recordedSpec(String fixture) {
        return Fixtures.container(fixture).getSpec().getValue().toByteArray();
    }

    @Test
    void aRecordedCriGpuContainersSpec() throws IOException {
        OciSpec spec = OciSpecParser.parse(new ByteArrayInputStream(recordedSpec("cri-container.bin")));
        assertThat(spec.gpuEnvironment()).containsExactly("NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=compute,utility");
        assertThat(spec.uid()).hasValue(0);
        assertThat(spec.readOnlyRoot()).isFalse();
        assertThat(spec.nvidiaDevices()).isFalse();
        assertThat(spec.binds()).first().isEqualTo(new ContainerInfo.Mount("bind", "/etc/hostname", "/etc/host-name", false));
        assertThat(spec.binds()).extracting(ContainerInfo.Mount::destination)
                .containsExactly("/etc/host-name", "/etc/hostname", "/etc/hosts", "/etc/resolv.conf", "/dev/shm");
        assertThat(spec.annotations()).containsEntry("io.kubernetes.cri.container-type", "container")
                .containsEntry("io.kubernetes.cri.container-name", "cuda")
                .containsEntry("io.kubernetes.cri.sandbox-id", Fixtures.CRI_SANDBOX)
                .containsEntry("cdi.k8s.io/nvidia-device-plugin_uuid", "nvidia.com/gpu=0");
    }

    @Test
    void aRecordedSandboxsSpec() throws IOException {
        OciSpec spec = OciSpecParser.parse(new ByteArrayInputStream(recordedSpec("cri-sandbox.bin")));
        assertThat(spec.annotations()).containsEntry("io.kubernetes.cri.container-type", "sandbox");
        assertThat(spec.readOnlyRoot()).isTrue();
        assertThat(spec.gpuEnvironment()).isEmpty();
    }

    @Test
    void nvidiaDeviceNodesAndAnyAnnotationNotReadAreLeftOut() throws IOException {
        OciSpec spec = parse("""
                {"linux": {"devices": [{"path": "/dev/fuse", "type": "c"}, {"path": "/dev/nvidia0", "type": "c", "major": 195}],
                           "resources": {"devices": [{"allow": false, "access": "rwm"}]}},
                 "annotations": {"com.example/secret": "x", "io.kubernetes.cri.container-type": "container"},
                 "process": {"user": {"uid": 1000, "gid": 100}, "env": ["PATH=/bin", "NVIDIA_VISIBLE_DEVICES=void"]},
                 "root": {"path": "rootfs", "readonly": true},
                 "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
                            {"destination": "/data", "source": "/srv/data", "options": ["rbind", "ro"]},
                            {"destination": "/lib/x.so", "type": "bind", "source": "/usr/lib/x.so", "options": ["rw"]}]}
                """);
        assertThat(spec.nvidiaDevices()).isTrue();
        assertThat(spec.annotations()).isEqualTo(Map.of("io.kubernetes.cri.container-type", "container"));
        assertThat(spec.uid()).isEqualTo(OptionalLong.of(1000));
        assertThat(spec.gid()).isEqualTo(OptionalLong.of(100));
        assertThat(spec.gpuEnvironment()).containsExactly("NVIDIA_VISIBLE_DEVICES=void");
        assertThat(spec.readOnlyRoot()).isTrue();
        assertThat(spec.binds()).containsExactly(new ContainerInfo.Mount("bind", "/srv/data", "/data", false),
                new ContainerInfo.Mount("bind", "/usr/lib/x.so", "/lib/x.so", true));
    }

    @Test
    void missingPartsAndNullsAreEmpty() throws IOException {
        assertThat(parse("{}")).isEqualTo(OciSpec.EMPTY);
        assertThat(parse("{\"process\": null, \"mounts\": null, \"annotations\": null, \"linux\": {\"devices\": null}}"))
                .isEqualTo(OciSpec.EMPTY);
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "[]", "null", "\"spec\"", "{\"process\": {\"env\": \"NVIDIA_VISIBLE_DEVICES=all\"}}",
        "{\"process\": {\"env\": [1, 2]}}", "{\"mounts\": {\"destination\": \"/x\"}}", "{\"mounts\": [[\"bind\"]]}",
        "{\"mounts\": [{\"source\": 5}]}", "{\"root\": []}", "{\"annotations\": [\"a\"]}",
        "{\"linux\": {\"devices\": [\"/dev/nvidia0\"]}}",
        "{\"process\": {\"env\": [\"NVIDIA_VISIBLE_DEVICES=all\"", "{\"mounts\": [{\"options\": [\"ro\"",
        "{\"a\": 1e99999999999999999999999999999999}"})
    void wrongTypesAndTruncationAreTheParsersError(String json) {
        assertThatThrownBy(() -> parse(json)).isInstanceOf(IOException.class);
    }

    @Test
    void aHugeEnvironmentKeepsOnlyBoundedGpuEntries() throws IOException {
        StringBuilder json = new StringBuilder("{\"process\": {\"env\": [");
        for (int i = 0; i < 100_000; i++) {
            json.append(i == 0 ? "" : ",").append(i % 2 == 0 ? "\"NVIDIA_X" + i + "=1\"" : "\"OTHER" + i + "=" + "v".repeat(20) + "\"");
        }
        json.append(",\"NVIDIA_LONG=").append("x".repeat(OciSpecParser.MAX_TEXT)).append("\"]}}");
        OciSpec spec = parse(json.toString());
        assertThat(spec.gpuEnvironment()).hasSize(OciSpecParser.MAX_ENTRIES).allMatch(e -> e.length() <= OciSpecParser.MAX_TEXT);
    }

    @Test
    void manyMountsAndAnnotationsAndLongValuesAreBounded() throws IOException {
        StringBuilder json = new StringBuilder("{\"mounts\": [");
        for (int i = 0; i < 5000; i++) {
            json.append(i == 0 ? "" : ",").append("{\"destination\": \"/m").append(i).append("\", \"type\": \"bind\", \"source\": \"/s\"}");
        }
        json.append(",{\"destination\": \"/long\", \"type\": \"bind\", \"source\": \"/").append("s".repeat(OciSpecParser.MAX_TEXT))
                .append("\"}], \"annotations\": {");
        for (int i = 0; i < 5000; i++) {
            json.append(i == 0 ? "" : ",").append("\"cdi.k8s.io/a").append(i).append("\": \"nvidia.com/gpu=0\"");
        }
        json.append(",\"io.kubernetes.cri.big\": \"").append("b".repeat(OciSpecParser.MAX_TEXT + 1)).append("\"}}");
        OciSpec spec = parse(json.toString());
        assertThat(spec.binds()).hasSize(OciSpecParser.MAX_ENTRIES);
        assertThat(spec.annotations()).hasSize(OciSpecParser.MAX_ENTRIES).doesNotContainKey("io.kubernetes.cri.big");
    }

    @Test
    void deepNestingIsRefusedNotFollowed() {
        String deep = "{\"x\": " + "[".repeat(10_000) + "]".repeat(10_000) + "}";
        assertThatThrownBy(() -> parse(deep)).isInstanceOf(IOException.class);
    }

    static Stream<Long> seeds() {
        return SeededCases.seeds(300);
    }

    /** The recorded spec with bytes changed, cut or duplicated: a spec or the parser's error, nothing else. */
    @ParameterizedTest
    @MethodSource("seeds")
    void mutatedRecordedSpecsGiveASpecOrAnIoException(long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        byte[] spec = recordedSpec(random.nextBoolean() ? "cri-container.bin" : "cri-sandbox.bin");
        int cut = random.nextInt(4) == 0 ? random.nextInt(spec.length) : spec.length;
        byte[] mutated = java.util.Arrays.copyOf(spec, cut);
        for (int i = random.nextInt(6); i > 0 && mutated.length > 0; i--) {
            int value = SeededCases.oneOf(random, java.util.List.of((int) '{', (int) '[', (int) '"', (int) ',', (int) ':',
                    (int) '}', random.nextInt(256)));
            mutated[random.nextInt(mutated.length)] = (byte) value;
        }
        InputStream in = new ByteArrayInputStream(mutated);
        try {
            OciSpec parsed = OciSpecParser.parse(in);
            assertThat(parsed.gpuEnvironment().size()).isLessThanOrEqualTo(OciSpecParser.MAX_ENTRIES);
        } catch (IOException expected) {
            // the parser's own error
        }
    }
}
