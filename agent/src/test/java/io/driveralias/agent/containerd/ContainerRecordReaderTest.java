package io.driveralias.agent.containerd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import io.driveralias.agent.containerd.api.Container;
import io.driveralias.agent.containerd.api.GetContainerResponse;
import io.driveralias.agent.json.DescriptionTooLarge;
import io.driveralias.agent.testing.SeededCases;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

class ContainerRecordReaderTest {

    private static ContainerRecord read(byte[] bytes) throws IOException {
        return ContainerRecordReader.readResponse(new ByteArrayInputStream(bytes));
    }

    private static byte[] response(Container c) {
        return GetContainerResponse.newBuilder().setContainer(c).build().toByteArray();
    }

    @Test
    void theRecordedCriContainerKeepsWhatTheAgentUses() throws IOException {
        ContainerRecord r = read(Fixtures.bytes("cri-container.bin"));
        assertThat(r.id()).isEqualTo(Fixtures.CRI_CONTAINER);
        assertThat(r.cri()).isEqualTo(ContainerRecord.CriKind.CONTAINER);
        assertThat(r.labels()).containsKeys("io.kubernetes.pod.name", "io.kubernetes.pod.namespace", "io.cri-containerd.kind")
                .allSatisfy((k, v) -> assertThat(k).matches("io\\.(kubernetes|cri-containerd)\\..*"));
        assertThat(r.runtimeBinary()).hasValueSatisfying(b -> assertThat(b).endsWith("nvidia-container-runtime"));
        assertThat(r.spec().gpuEnvironment()).contains("NVIDIA_VISIBLE_DEVICES=all");
        assertThat(r.snapshotter()).isEqualTo("overlayfs");
        assertThat(r.snapshotKey()).isEqualTo(Fixtures.CRI_CONTAINER);
        assertThat(read(Fixtures.bytes("ctr-container.bin")).cri()).isEqualTo(ContainerRecord.CriKind.NONE);
    }

    /**
     * A record of 32 MB (a label, an extension and a spec holding megabytes each): read without
     * keeping any of it but the GPU variable.
     */
    @Test
    void aHugeRecordIsReadAsItStreams() throws IOException {
        byte[] label = entry(2, "io.kubernetes.huge", "v".repeat(8 << 20));
        byte[] extension = anyEntry(10, "io.example/record", 8 << 20);
        String env = "{\"process\": {\"env\": [\"CONFIG=" + "x".repeat(16 << 20) + "\", \"NVIDIA_VISIBLE_DEVICES=all\"]}}";
        byte[] spec = field(5, field(2, env.getBytes(StandardCharsets.UTF_8)));
        byte[] id = field(1, "big".getBytes(StandardCharsets.US_ASCII));
        byte[] container = concat(id, label, extension, spec);
        ContainerRecord r = read(field(1, container));
        assertThat(r.id()).isEqualTo("big");
        assertThat(r.labels()).isEmpty();
        assertThat(r.spec().gpuEnvironment()).containsExactly("NVIDIA_VISIBLE_DEVICES=all");
    }

    @Test
    void thousandsOfLabelsKeepOnlyABoundedFewOfTheKubeletsAndTheCris() throws IOException {
        Container.Builder c = Container.newBuilder().setId("many");
        for (int i = 0; i < 5000; i++) {
            c.putLabels("io.kubernetes.x" + i, "v");
            c.putLabels("other" + i, "w".repeat(100));
        }
        assertThat(read(response(c.build())).labels()).hasSizeLessThanOrEqualTo(64);
    }

    @Test
    void anOversizedKeptPartRefusesTheRecord() {
        String spec = "{\"process\": {\"env\": [\"NVIDIA_VISIBLE_DEVICES=" + "GPU-0,".repeat(2000) + "\"]}}";
        Container c = Container.newBuilder().setId("x").setSpec(Any.newBuilder().setValue(ByteString.copyFromUtf8(spec))).build();
        assertThatThrownBy(() -> read(response(c))).isInstanceOf(DescriptionTooLarge.class);
    }

    @Test
    void aSpecThatIsNotJsonAsksForNothing() throws IOException {
        Container c = Container.newBuilder().setId("x").setSpec(Any.newBuilder().setValue(ByteString.copyFromUtf8("{[nope"))).build();
        assertThat(read(response(c)).spec()).isEqualTo(OciSpec.EMPTY);
    }

    static Stream<Long> seeds() {
        return SeededCases.seeds(300);
    }

    /** The recorded records with bytes changed or cut: a record or the reader's own error, nothing else. */
    @ParameterizedTest
    @MethodSource("seeds")
    void mutatedRecordsGiveARecordOrAnIoException(long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        byte[] bytes = Fixtures.bytes(SeededCases.oneOf(random, List.of("cri-container.bin", "cri-sandbox.bin", "ctr-container.bin")));
        int cut = random.nextInt(4) == 0 ? random.nextInt(bytes.length) : bytes.length;
        byte[] mutated = java.util.Arrays.copyOf(bytes, cut);
        for (int i = random.nextInt(8); i > 0 && mutated.length > 0; i--) {
            mutated[random.nextInt(mutated.length)] = (byte) random.nextInt(256);
        }
        try {
            read(mutated);
        } catch (IOException expected) {
            // the reader's own error
        }
    }

    // A few bytes of protobuf written by hand: the test's records are bigger than the heap should hold.

    private static byte[] field(int number, byte[] value) {
        return concat(varint(number << 3 | 2), varint(value.length), value);
    }

    private static byte[] entry(int number, String key, String value) {
        return field(number, concat(field(1, key.getBytes(StandardCharsets.UTF_8)), field(2, value.getBytes(StandardCharsets.UTF_8))));
    }

    private static byte[] anyEntry(int number, String key, int size) {
        byte[] any = field(2, new byte[size]);
        return field(number, concat(field(1, key.getBytes(StandardCharsets.UTF_8)), field(2, any)));
    }

    private static byte[] varint(long value) {
        byte[] out = new byte[10];
        int n = 0;
        while ((value & ~0x7FL) != 0) {
            out[n++] = (byte) ((value & 0x7F) | 0x80);
            value >>>= 7;
        }
        out[n++] = (byte) value;
        return java.util.Arrays.copyOf(out, n);
    }

    private static byte[] concat(byte[]... parts) {
        int total = 0;
        for (byte[] p : parts) {
            total += p.length;
        }
        byte[] out = new byte[total];
        int at = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, out, at, p.length);
            at += p.length;
        }
        return out;
    }
}
