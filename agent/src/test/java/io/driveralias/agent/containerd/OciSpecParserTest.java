package io.driveralias.agent.containerd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.json.DescriptionTooLarge;
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

    /** Megabytes of environment cost nothing but the reading: only the two NVIDIA variables the agent uses are kept. */
    @Test
    void aHugeEnvironmentKeepsOnlyTheTwoVariablesUsed() throws IOException {
        StringBuilder json = new StringBuilder("{\"process\": {\"env\": [");
        for (int i = 0; i < 100_000; i++) {
            json.append(i == 0 ? "" : ",").append(i % 2 == 0 ? "\"NVIDIA_X" + i + "=1\"" : "\"OTHER" + i + "=" + "v".repeat(20) + "\"");
        }
        json.append(",\"CONFIG=").append("x".repeat(4_000_000)).append('"');
        json.append(",\"NVIDIA_VISIBLE_DEVICES=0\",\"NVIDIA_DRIVER_CAPABILITIES=compute\",\"NVIDIA_VISIBLE_DEVICES=1\"]}}");
        OciSpec spec = parse(json.toString());
        assertThat(spec.gpuEnvironment()).containsExactly("NVIDIA_VISIBLE_DEVICES=1", "NVIDIA_DRIVER_CAPABILITIES=compute");
    }

    @Test
    void aKeptValueOverItsBoundRefusesTheSpec() {
        String devices = "{\"process\": {\"env\": [\"NVIDIA_VISIBLE_DEVICES=" + "0,".repeat(OciSpecParser.MAX_TEXT) + "\"]}}";
        assertThatThrownBy(() -> parse(devices)).isInstanceOf(DescriptionTooLarge.class).hasMessageContaining("NVIDIA_VISIBLE_DEVICES");
        String source = "{\"mounts\": [{\"destination\": \"/d\", \"type\": \"bind\", \"source\": \"/" + "s".repeat(OciSpecParser.MAX_TEXT)
                + "\"}]}";
        assertThatThrownBy(() -> parse(source)).isInstanceOf(DescriptionTooLarge.class);
        String cdi = "{\"annotations\": {\"cdi.k8s.io/x\": \"" + "nvidia.com/gpu=0,".repeat(1000) + "\"}}";
        assertThatThrownBy(() -> parse(cdi)).isInstanceOf(DescriptionTooLarge.class);
    }

    @Test
    void hundredsOfMountsAreKeptThousandsRefused() throws IOException {
        assertThat(parse(binds(1000)).binds()).hasSize(1000);
        assertThatThrownBy(() -> parse(binds(10_000))).isInstanceOf(DescriptionTooLarge.class)
                .hasMessageContaining("together over");
    }

    /** Annotations the agent does not read cost nothing, whatever their prefix, number or size. */
    @Test
    void annotationsNotReadAreNeverKept() throws IOException {
        StringBuilder json = new StringBuilder("{\"annotations\": {");
        for (int i = 0; i < 50_000; i++) {
            json.append(i == 0 ? "" : ",").append("\"io.kubernetes.cri.passed-through-").append(i).append("\": \"").append("v".repeat(40))
                    .append('"');
        }
        json.append(",\"io.kubernetes.cri.huge\": \"").append("b".repeat(2_000_000)).append("\"");
        json.append(",\"io.kubernetes.cri.container-name\": \"cuda\"}}");
        assertThat(parse(json.toString()).annotations()).isEqualTo(Map.of("io.kubernetes.cri.container-name", "cuda"));
    }

    private static String binds(int n) {
        StringBuilder json = new StringBuilder("{\"mounts\": [");
        for (int i = 0; i < n; i++) {
            json.append(i == 0 ? "" : ",").append("{\"destination\": \"/var/lib/data/m").append(i)
                    .append("\", \"type\": \"bind\", \"source\": \"/srv/volumes/s").append(i).append("\"}");
        }
        return json.append("]}").toString();
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
            assertThat(parsed.gpuEnvironment().size()).isLessThanOrEqualTo(2);
        } catch (IOException expected) {
            // the parser's own error
        }
    }
}
