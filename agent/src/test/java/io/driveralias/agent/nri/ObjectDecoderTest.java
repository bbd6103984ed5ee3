package io.driveralias.agent.nri;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedOutputStream;
import io.driveralias.agent.testing.nri.Container;
import io.driveralias.agent.testing.nri.Mount;
import io.driveralias.agent.testing.nri.PodSandbox;
import io.driveralias.agent.testing.nri.SynchronizeRequest;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The bounded decoder against pods and containers as a runtime sends them, normal and hostile:
 * what it keeps, what it leaves out and says so, and that what it leaves out costs it no memory.
 */
class ObjectDecoderTest {

    private static final PodSandbox POD = NriInputs.pod("train");

    static NriContainer container(byte[] bytes) throws NriProtocolException {
        return new ObjectDecoder().container(reader(bytes));
    }

    /** The bytes in a direct buffer, as the plugin holds a message. */
    static ProtoReader reader(byte[] bytes) {
        ByteBuffer direct = ByteBuffer.allocateDirect(bytes.length);
        direct.put(bytes).flip();
        return new ProtoReader(direct, 0, bytes.length);
    }

    static long allocatedBy(ThrowingRunnable run) throws Exception {
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long before = threads.getCurrentThreadAllocatedBytes();
        run.run();
        return threads.getCurrentThreadAllocatedBytes() - before;
    }

    interface ThrowingRunnable {
        void run() throws Exception;
    }

    @Test
    void aGpuContainerKeepsWhatTheAgentUsesAndNothingElse() throws Exception {
        NriContainer c = container(NriInputs.gpuContainer("c1", POD, 4242).build().toByteArray());

        assertThat(c.id()).isEqualTo("c1");
        assertThat(c.podSandboxId()).isEqualTo("sandbox-train");
        assertThat(c.name()).isEqualTo("main");
        assertThat(c.state()).isEqualTo(NriContainer.State.CREATED);
        assertThat(c.pid()).isEqualTo(4242);
        assertThat(c.labels()).containsOnlyKeys("io.kubernetes.container.name", "io.kubernetes.pod.name",
                "io.kubernetes.pod.namespace", "io.kubernetes.pod.uid");
        assertThat(c.annotations()).containsOnly(Map.entry("io.kubernetes.cri.container-type", "container"),
                Map.entry("io.kubernetes.cri.sandbox-name", "train"),
                Map.entry("cdi.k8s.io/nvidia-device-plugin_uuid", "nvidia.com/gpu=GPU-1234"));
        assertThat(c.nvidiaEnv()).containsExactly("NVIDIA_VISIBLE_DEVICES=GPU-1234", "NVIDIA_DRIVER_CAPABILITIES=compute,utility");
        assertThat(c.bindMounts()).containsExactly(
                new NriMount("/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05", "bind", "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05",
                        List.of("ro", "nosuid", "rbind")),
                new NriMount("/etc/hosts", "", "/var/lib/kubelet/pods/x/etc-hosts", List.of("rbind", "rprivate", "rw")));
        assertThat(c.bindMounts().get(0).readOnly()).isTrue();
        assertThat(c.nvidiaDevice()).isTrue();
        assertThat(c.complete()).isTrue();
    }

    @Test
    void aPodKeepsItsIdentityAndHandler() throws Exception {
        NriPod p = new ObjectDecoder().pod(reader(POD.toByteArray()));
        assertThat(p).isEqualTo(new NriPod("sandbox-train", "train", "uid-train", "default", "nvidia", 0));
        assertThat(p.complete()).isTrue();
    }

    @Test
    void aPlainContainerHasNoGpuSign() throws Exception {
        NriContainer c = container(NriInputs.plainContainer("c2", POD, 7).build().toByteArray());
        assertThat(c.nvidiaEnv()).isEmpty();
        assertThat(c.nvidiaDevice()).isFalse();
        assertThat(c.bindMounts()).isEmpty();
        assertThat(c.labels()).containsOnlyKeys("io.kubernetes.container.name");
    }

    @Test
    void hugeValuesOutsideWhatIsKeptCostNothing() throws Exception {
        String fourMb = "x".repeat(4_000_000);
        byte[] bytes = NriInputs.gpuContainer("c3", POD, 9).addEnv("BLOB=" + fourMb).putLabels("blob", fourMb)
                .putAnnotations("io.kubernetes.container.blob", fourMb.substring(0, 100_000)).addArgs(fourMb.substring(0, 200_000))
                .build().toByteArray();
        ProtoReader in = reader(bytes);
        NriContainer[] out = new NriContainer[1];

        long allocated = allocatedBy(() -> out[0] = new ObjectDecoder().container(in));

        assertThat(out[0].complete()).isTrue();
        assertThat(out[0].nvidiaEnv()).hasSize(2);
        assertThat(allocated).as("bytes allocated to decode a %d-byte container", bytes.length).isLessThan(64 << 10);
    }

    @Test
    void aKeptStringOverItsBoundIsLeftOutAndCounted() throws Exception {
        String long5k = "v".repeat(5000);
        byte[] bytes = NriInputs.gpuContainer("c4", POD, 9).addEnv("NVIDIA_VISIBLE_DEVICES_HUGE=" + long5k)
                .putLabels("io.kubernetes.huge", long5k).setName(long5k)
                .addMounts(Mount.newBuilder().setDestination("/" + long5k).setType("bind").setSource("/x")).build().toByteArray();

        NriContainer c = container(bytes);

        assertThat(c.name()).isEmpty();
        assertThat(c.nvidiaEnv()).hasSize(2);
        assertThat(c.labels()).doesNotContainKey("io.kubernetes.huge");
        assertThat(c.bindMounts()).hasSize(2);
        assertThat(c.truncated()).isEqualTo(4);
        assertThat(c.overBounds()).isFalse();
        assertThat(c.complete()).isFalse();
    }

    @Test
    void thousandsOfKeptLabelsStopAtTheListBound() throws Exception {
        Container.Builder b = NriInputs.gpuContainer("c5", POD, 9);
        for (int i = 0; i < 3000; i++) {
            b.putLabels("io.kubernetes.flood-" + i, "v");
            b.addEnv("NVIDIA_FLOOD_" + i + "=1");
        }
        ObjectDecoder decoder = new ObjectDecoder();
        NriContainer c = decoder.container(reader(b.build().toByteArray()));
        assertThat(c.labels().size()).isBetween(100, ObjectDecoder.MAX_ENTRIES);
        assertThat(c.overBounds()).isTrue();
        assertThat(decoder.lastRecordCost()).isLessThanOrEqualTo(ObjectDecoder.RECORD_BUDGET);
        assertThat(c.id()).isEqualTo("c5");
        assertThat(c.pid()).isEqualTo(9);
    }

    @Test
    void aListStopsAtItsEntryBoundEvenWithinTheBudget() throws Exception {
        Container.Builder b = Container.newBuilder().setId("c5b");
        for (int i = 0; i < 1500; i++) {
            b.addEnv("NVIDIA_");
        }
        NriContainer c = container(b.build().toByteArray());
        assertThat(c.nvidiaEnv()).hasSize(ObjectDecoder.MAX_ENTRIES);
        assertThat(c.overBounds()).isTrue();
    }

    @Test
    void oneMessageKeepsAtMostItsBudgetWhateverTheNumberOfContainers() throws Exception {
        SynchronizeRequest.Builder sync = SynchronizeRequest.newBuilder().addPods(POD);
        String value = "w".repeat(3000);
        for (int i = 0; i < 120; i++) {
            Container.Builder b = NriInputs.gpuContainer("fat-" + i, POD, 100 + i);
            for (int j = 0; j < 10; j++) {
                b.putLabels("io.kubernetes.fat-" + j, value);
            }
            sync.addContainers(b);
        }
        byte[] bytes = sync.build().toByteArray();
        assertThat(bytes.length).isLessThan(MuxReader.MAX_MESSAGE);

        NriSync part = PluginMessages.synchronize(reader(bytes));

        assertThat(part.containers()).hasSize(120);
        assertThat(part.containers()).extracting(NriContainer::id).doesNotContain("");
        assertThat(part.containers()).extracting(NriContainer::pid).doesNotContain(0);
        long keptLabelBytes = part.containers().stream().flatMap(c -> c.labels().values().stream()).mapToLong(String::length).sum();
        assertThat(keptLabelBytes).isLessThanOrEqualTo(ObjectDecoder.MESSAGE_BUDGET);
        assertThat(part.containers().get(0).complete()).isTrue();
        assertThat(part.containers().get(119).overBounds()).isTrue();
        assertThat(part.last()).isTrue();
        assertThat(part.dropped()).isZero();
    }

    @Test
    void aSynchronizeOfMoreObjectsThanOneMessageMayHandOverSaysHowManyWereDropped() throws Exception {
        SynchronizeRequest.Builder sync = SynchronizeRequest.newBuilder().setMore(true);
        for (int i = 0; i < PluginMessages.MAX_OBJECTS + 10; i++) {
            sync.addContainers(Container.newBuilder().setId("c" + i));
            sync.addPods(PodSandbox.newBuilder().setId("p" + i));
        }
        NriSync part = PluginMessages.synchronize(reader(sync.build().toByteArray()));
        assertThat(part.containers()).hasSize(PluginMessages.MAX_OBJECTS);
        assertThat(part.pods()).hasSize(PluginMessages.MAX_OBJECTS);
        assertThat(part.dropped()).isEqualTo(20);
        assertThat(part.last()).isFalse();
    }

    @Test
    void unknownFieldsAndFieldsOfAnotherWireTypeAreSkipped() throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        CodedOutputStream out = CodedOutputStream.newInstance(bytes);
        out.writeString(1, "c6");
        out.writeBytes(4, ByteString.copyFromUtf8("state as bytes")); // state is a varint: skipped
        out.writeUInt64(100, 7);
        out.writeFixed64(101, 7);
        out.writeFixed32(102, 7);
        out.writeUInt32(12, 77);
        out.writeString(3, "later");
        out.flush();

        NriContainer c = container(bytes.toByteArray());

        assertThat(c.id()).isEqualTo("c6");
        assertThat(c.state()).isEqualTo(NriContainer.State.UNKNOWN);
        assertThat(c.pid()).isEqualTo(77);
        assertThat(c.name()).isEqualTo("later");
    }

    @Test
    void groupsAndTruncatedFieldsAreTheDecodersOwnError() throws IOException {
        assertThatThrownBy(() -> container(new byte[] {(byte) 0x0b, 0x0c})).isInstanceOf(NriProtocolException.class)
                .hasMessageContaining("wire type 3");
        byte[] full = NriInputs.gpuContainer("c7", POD, 1).build().toByteArray();
        byte[] cut = java.util.Arrays.copyOf(full, full.length - 1);
        assertThatThrownBy(() -> container(cut)).isInstanceOf(NriProtocolException.class);
    }

    /** Found: ids of 4 KiB keyed the agent's bookkeeping until the shipped heap ran out. An id is containerd's kind or none. */
    @Test
    void anIdThatIsNoneByContainerdsRulesIsNotKept() throws Exception {
        assertThat(container(NriInputs.gpuContainer("a".repeat(76), POD, 1).build().toByteArray()).id()).hasSize(76);
        assertThat(container(NriInputs.gpuContainer("job-1.v2_x", POD, 1).build().toByteArray()).id()).isEqualTo("job-1.v2_x");
        for (String bad : List.of("a".repeat(77), "a".repeat(4096), "../../etc", "a b", "-a", "a-", "a..b", "c\u00e9", "\n")) {
            NriContainer c = container(NriInputs.gpuContainer(bad, POD, 1).build().toByteArray());
            assertThat(c.id()).as(bad).isEmpty();
            assertThat(c.complete()).as("left out, and said so").isFalse();
        }
        byte[] invalidUtf8 = new byte[4096];
        java.util.Arrays.fill(invalidUtf8, (byte) 0xFF);
        // protobuf-java will not build a string field of invalid UTF-8: the id field written by hand (tag 1, length 4096).
        ByteArrayOutputStream written = new ByteArrayOutputStream();
        written.write(new byte[] {0x0a, (byte) 0x80, 0x20});
        written.write(invalidUtf8);
        written.write(NriInputs.gpuContainer("x", POD, 1).clearId().build().toByteArray());
        byte[] bytes = written.toByteArray();
        ProtoReader in = reader(bytes);
        NriContainer[] out = new NriContainer[1];
        long allocated = allocatedBy(() -> out[0] = new ObjectDecoder().container(in));
        assertThat(out[0].id()).isEmpty();
        assertThat(allocated).as("4 KiB of 0xFF decoded into nothing").isLessThan(16 << 10);
    }

    /** Found: invalid UTF-8 doubled in size decoding, past what the bounds meant to allow. It is charged as it decodes. */
    @Test
    void textThatIsNotAsciiIsChargedWhatItCostsDecoded() throws Exception {
        Container.Builder ascii = NriInputs.plainContainer("ascii", POD, 1);
        Container.Builder binary = NriInputs.plainContainer("binary", POD, 1);
        for (int i = 0; i < 30; i++) {
            ascii.putLabels("io.kubernetes.l" + i, "v".repeat(4000));
            binary.putLabels("io.kubernetes.l" + i, "\u00e9".repeat(2000));
        }
        ObjectDecoder decoder = new ObjectDecoder();
        NriContainer a = decoder.container(reader(ascii.build().toByteArray()));
        long asciiCost = decoder.lastRecordCost();
        NriContainer b = decoder.container(reader(binary.build().toByteArray()));

        assertThat(a.labels().size()).as("ASCII: 4,000 bytes a label").isGreaterThan(b.labels().size());
        assertThat(b.labels().size()).as("4,000 bytes of e-acute a label, 8,000 decoded").isBetween(a.labels().size() / 2 - 1,
                a.labels().size() / 2 + 1);
        assertThat(decoder.lastRecordCost()).isLessThanOrEqualTo(ObjectDecoder.RECORD_BUDGET);
        assertThat(asciiCost).isLessThanOrEqualTo(ObjectDecoder.RECORD_BUDGET);
    }

    @Test
    void oneOfNvidiasCdiDevicesIsSeen() throws Exception {
        Container.Builder c = NriInputs.plainContainer("c", POD, 1);
        assertThat(container(c.build().toByteArray()).nvidiaCdiDevice()).isFalse();
        c.addCDIDevices(io.driveralias.agent.testing.nri.CDIDevice.newBuilder().setName("vendor.com/fpga=0"));
        assertThat(container(c.build().toByteArray()).nvidiaCdiDevice()).isFalse();
        c.addCDIDevices(io.driveralias.agent.testing.nri.CDIDevice.newBuilder().setName("nvidia.com/gpu=GPU-1234"));
        assertThat(container(c.build().toByteArray()).nvidiaCdiDevice()).isTrue();
    }
}
