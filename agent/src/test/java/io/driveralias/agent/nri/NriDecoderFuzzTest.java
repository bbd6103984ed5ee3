package io.driveralias.agent.nri;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import com.google.protobuf.ByteString;
import io.driveralias.agent.testing.SeededCases;
import io.driveralias.agent.testing.nri.CDIDevice;
import io.driveralias.agent.testing.nri.ConfigureRequest;
import io.driveralias.agent.testing.nri.Container;
import io.driveralias.agent.testing.nri.Image;
import io.driveralias.agent.testing.nri.LinuxContainer;
import io.driveralias.agent.testing.nri.LinuxDevice;
import io.driveralias.agent.testing.nri.Mount;
import io.driveralias.agent.testing.nri.PodSandbox;
import io.driveralias.agent.testing.nri.Request;
import io.driveralias.agent.testing.nri.StateChangeEvent;
import io.driveralias.agent.testing.nri.SynchronizeRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The bounded decoder against generated pods and containers, compared with a reference written
 * on protobuf-java's own parser and the keep rules stated plainly; then against the same messages
 * mutated (bytes flipped, varints of extreme values spliced in, cut short), where it must answer
 * or fail with its own {@link NriProtocolException}, without hanging and without allocating by
 * what a length field claims.
 */
class NriDecoderFuzzTest {

    private static final Duration HANG = Duration.ofSeconds(5);
    private static final List<String> LABEL_KEYS = List.of("io.kubernetes.pod.name", "io.kubernetes.container.name", "app",
            "io.kubernetes.", "io.kubernete", "team", "io.kubernetes.cri.x");
    private static final List<String> ANNOTATION_KEYS = List.of("io.kubernetes.cri.container-type", "io.kubernetes.cri.",
            "cdi.k8s.io/nvidia", "cdi.k8s.io/", "cdi.k8s.io", "io.kubernetes.container.hash", "other");
    private static final List<String> ENV = List.of("NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_", "NVIDIA", "PATH=/bin", "nvidia_x=1",
            "NVIDIA_DRIVER_CAPABILITIES=compute");
    private static final List<String> MOUNT_TYPES = List.of("bind", "", "tmpfs", "proc", "rbind", "binds");
    private static final List<String> OPTIONS = List.of("ro", "rbind", "bind", "nosuid", "rprivate", "bindx");
    private static final List<String> DEVICES = List.of("/dev/nvidia0", "/dev/nvidiactl", "/dev/nvidia", "/dev/null", "/dev/nvidi",
            "/dev/nvidia-uvm");
    private static final List<String> CDI_DEVICES = List.of("nvidia.com/gpu=0", "nvidia.com/mig=1:0", "vendor.com/fpga=0",
            "nvidia.com", "nvidia.co/gpu=0", "");
    private static final long[] EXTREMES = {0, 1, 0x7f, 0x80, 0xff, 4096, 4097, 0x7fff_ffffL, 0xffff_ffffL, Long.MAX_VALUE, -1};

    static Stream<Long> seeds() {
        return SeededCases.seeds(1500);
    }

    /** Every decoding path once, failures included, so that class loading is not counted as a case's allocation. */
    @BeforeAll
    static void warmUp() {
        SplittableRandom random = new SplittableRandom(7);
        for (int i = 0; i < 200; i++) {
            int kind = i % 4;
            byte[] bytes = message(random, kind);
            for (byte[] input : List.of(bytes, Arrays.copyOf(bytes, bytes.length / 2), new byte[] {(byte) 0x0b}, new byte[] {0x12, 0x7f})) {
                try {
                    decode(kind, input);
                } catch (NriProtocolException expected) {
                    // warming up
                }
            }
        }
    }

    /** Text of a random length: mostly short, sometimes just over the decoder's bound or far over it. */
    private static String text(SplittableRandom random, String prefix) {
        int extra = switch (random.nextInt(12)) {
            case 0 -> ObjectDecoder.MAX_STRING + 1 - prefix.length();
            case 1 -> ObjectDecoder.MAX_STRING - prefix.length();
            case 2 -> 20_000;
            default -> random.nextInt(30);
        };
        return prefix + SeededCases.string(random, "abcdef-_./=", random.nextInt(4) == 0, Math.max(0, extra), Math.max(0, extra));
    }

    /** An id: half of them by containerd's rules (64 hex digits, or a ctr name), the rest any text. */
    private static String id(SplittableRandom random) {
        return switch (random.nextInt(4)) {
            case 0 -> SeededCases.string(random, "0123456789abcdef", false, 64, 64);
            case 1 -> "job-" + random.nextInt(1000) + ".v" + random.nextInt(9);
            default -> text(random, "");
        };
    }

    static Container container(SplittableRandom random) {
        Container.Builder c = Container.newBuilder().setId(id(random)).setPodSandboxId(text(random, "")).setName(text(random, ""))
                .setState(random.nextInt(7) - 1).setPid(random.nextInt(3) == 0 ? -1 : random.nextInt(1 << 22));
        for (int i = random.nextInt(12); i > 0; i--) {
            c.putLabels(text(random, SeededCases.oneOf(random, LABEL_KEYS)), text(random, ""));
        }
        // A tenth are fat: kept labels and environment past the container's budget, then small ones that still fit.
        for (int i = random.nextInt(10) == 0 ? 24 : 0; i > 0; i--) {
            c.putLabels("io.kubernetes.fat-" + i, "f".repeat(random.nextInt(3000, 4000)));
            c.addEnv("NVIDIA_FAT_" + i + "=" + "g".repeat(random.nextInt(4000)));
        }
        for (int i = random.nextInt(12); i > 0; i--) {
            c.putAnnotations(text(random, SeededCases.oneOf(random, ANNOTATION_KEYS)), text(random, ""));
        }
        for (int i = random.nextInt(12); i > 0; i--) {
            c.addEnv(text(random, SeededCases.oneOf(random, ENV)));
            c.addArgs(text(random, ""));
        }
        for (int i = random.nextInt(6); i > 0; i--) {
            Mount.Builder m = Mount.newBuilder().setDestination(text(random, "/")).setType(SeededCases.oneOf(random, MOUNT_TYPES))
                    .setSource(random.nextInt(5) == 0 ? "" : text(random, "/"));
            for (int k = random.nextInt(5); k > 0; k--) {
                m.addOptions(random.nextInt(8) == 0 ? text(random, "") : SeededCases.oneOf(random, OPTIONS));
            }
            c.addMounts(m);
        }
        if (random.nextBoolean()) {
            LinuxContainer.Builder linux = LinuxContainer.newBuilder().setCgroupsPath(text(random, "/"));
            for (int i = random.nextInt(4); i > 0; i--) {
                linux.addDevices(LinuxDevice.newBuilder().setPath(SeededCases.oneOf(random, DEVICES)).setMajor(195));
            }
            c.setLinux(linux);
        }
        if (random.nextInt(3) == 0) {
            c.setImage(Image.newBuilder().setName(text(random, "registry.example/")));
        }
        for (int i = random.nextInt(3); i > 0; i--) {
            c.addCDIDevices(CDIDevice.newBuilder().setName(SeededCases.oneOf(random, CDI_DEVICES)));
        }
        return c.build();
    }

    static PodSandbox pod(SplittableRandom random) {
        return PodSandbox.newBuilder().setId(text(random, "")).setName(text(random, "")).setUid(text(random, ""))
                .setNamespace(text(random, "")).setRuntimeHandler(text(random, "")).putLabels(text(random, "io.kubernetes."), "x")
                .putAnnotations(text(random, ""), text(random, "")).setPid(random.nextInt(100)).build();
    }

    // The reference: the keep rules stated plainly, on protobuf-java's own parse of the same bytes.

    private static int bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8).length;
    }

    /** What a kept string costs: its bytes when all ASCII, else twice its bytes (two bytes a character decoded). */
    private static long cost(String s) {
        return s.chars().allMatch(ch -> ch < 0x80) ? bytes(s) : 2L * bytes(s);
    }

    private static final java.util.regex.Pattern CONTAINER_ID = java.util.regex.Pattern.compile("[A-Za-z0-9]+([._-][A-Za-z0-9]+)*");

    /**
     * What the decoder keeps of {@code c}, by its rules: the id only if it is one by containerd's
     * rules, other identity fields kept unless over the string bound; labels, annotations, environment
     * and bind mounts in the order they are on the wire, each kept string costing its bytes (twice
     * them unless all ASCII) and 48, each entry 32 more, within the container's budget (an item that
     * does not fit is left out and marks the record over its bounds; a later smaller one may fit).
     */
    static NriContainer expected(Container c) {
        Reference r = new Reference();
        // proto3 leaves an empty id off the wire: nothing to refuse.
        String id = c.getId().isEmpty() || c.getId().length() <= 76 && CONTAINER_ID.matcher(c.getId()).matches() ? c.getId()
                : r.invalid();
        String pod = r.identity(c.getPodSandboxId());
        String name = r.identity(c.getName());
        Map<String, String> labels = new LinkedHashMap<>();
        c.getLabelsMap().forEach((k, v) -> r.entry(k, v, k.startsWith("io.kubernetes."), labels));
        Map<String, String> annotations = new LinkedHashMap<>();
        c.getAnnotationsMap().forEach((k, v) -> r.entry(k, v, k.startsWith("io.kubernetes.cri.") || k.startsWith("cdi.k8s.io/"),
                annotations));
        List<String> env = new ArrayList<>();
        for (String e : c.getEnvList()) {
            if (e.startsWith("NVIDIA_") && r.keep(e)) {
                env.add(e);
            }
        }
        List<NriMount> mounts = new ArrayList<>();
        for (Mount m : c.getMountsList()) {
            if (!(m.getType().equals("bind") || m.getOptionsList().contains("bind") || m.getOptionsList().contains("rbind"))) {
                continue;
            }
            boolean kept = (m.getDestination().isEmpty() || r.keep(m.getDestination())) && (m.getSource().isEmpty()
                    || r.keep(m.getSource())) && (m.getType().isEmpty() || r.keep(m.getType())) && r.afford(32);
            for (int i = 0; kept && i < m.getOptionsCount(); i++) {
                kept = r.keep(m.getOptions(i));
            }
            if (kept) {
                mounts.add(new NriMount(m.getDestination(), m.getType(), m.getSource(), m.getOptionsList()));
            }
        }
        boolean device = c.getLinux().getDevicesList().stream().anyMatch(d -> d.getPath().startsWith("/dev/nvidia"));
        boolean cdi = c.getCDIDevicesList().stream().anyMatch(d -> d.getName().startsWith("nvidia.com/"));
        long pid = Integer.toUnsignedLong(c.getPid());
        String image = c.hasImage() ? (bytes(c.getImage().getName()) > ObjectDecoder.MAX_STRING ? r.invalid() : c.getImage().getName())
                : annotations.getOrDefault("io.kubernetes.cri.image-name", "");
        return new NriContainer(id, pod, name, image, c.getState() >= 0 && c.getState() <= 4 ? NriContainer.State.values()[c.getState()]
                : NriContainer.State.UNKNOWN, pid <= Integer.MAX_VALUE ? (int) pid : 0, labels, annotations, env, mounts, device, cdi,
                r.truncated, r.overBounds);
    }

    /** The reference's bookkeeping: the container's budget, truncations, and whether a bound was met. */
    private static final class Reference {
        long budget = ObjectDecoder.RECORD_BUDGET;
        int truncated;
        boolean overBounds;

        String identity(String s) {
            if (bytes(s) > ObjectDecoder.MAX_STRING) {
                truncated++;
                return "";
            }
            return s;
        }

        String invalid() {
            truncated++;
            return "";
        }

        boolean afford(long cost) {
            if (cost > budget) {
                overBounds = true;
                return false;
            }
            budget -= cost;
            return true;
        }

        boolean keep(String s) {
            if (bytes(s) > ObjectDecoder.MAX_STRING) {
                truncated++;
                return false;
            }
            return afford(48 + cost(s));
        }

        void entry(String k, String v, boolean wanted, Map<String, String> into) {
            if (!wanted) {
                return;
            }
            if (bytes(k) > ObjectDecoder.MAX_STRING || bytes(v) > ObjectDecoder.MAX_STRING) {
                truncated++;
            } else if (afford(32 + 96 + cost(k) + cost(v))) {
                into.put(k, v);
            }
        }
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void generatedContainersDecodeAsTheReferenceSays(long seed) throws Exception {
        SplittableRandom random = new SplittableRandom(seed);
        byte[] bytes = container(random).toByteArray();

        NriContainer got = ObjectDecoderTest.container(bytes);

        NriContainer want = expected(Container.parseFrom(bytes));
        assertThat(got.id()).isEqualTo(want.id());
        assertThat(got.podSandboxId()).isEqualTo(want.podSandboxId());
        assertThat(got.name()).isEqualTo(want.name());
        assertThat(got.image()).isEqualTo(want.image());
        assertThat(got.state()).isEqualTo(want.state());
        assertThat(got.pid()).isEqualTo(want.pid());
        assertThat(got.labels()).isEqualTo(want.labels());
        assertThat(got.annotations()).isEqualTo(want.annotations());
        assertThat(got.nvidiaEnv()).isEqualTo(want.nvidiaEnv());
        assertThat(got.bindMounts()).isEqualTo(want.bindMounts());
        assertThat(got.nvidiaDevice()).isEqualTo(want.nvidiaDevice());
        assertThat(got.nvidiaCdiDevice()).isEqualTo(want.nvidiaCdiDevice());
        assertThat(got.truncated()).isEqualTo(want.truncated());
        assertThat(got.overBounds()).isEqualTo(want.overBounds());
    }

    /** One of the messages the plugin decodes, generated: a StartContainer, a Synchronize, a Configure, or a call's envelope. */
    private static byte[] message(SplittableRandom random, int kind) {
        return switch (kind) {
            case 0 -> StateChangeEvent.newBuilder().setEvent(6).setPod(pod(random)).setContainer(container(random)).build().toByteArray();
            case 1 -> {
                SynchronizeRequest.Builder sync = SynchronizeRequest.newBuilder().setMore(random.nextBoolean());
                for (int i = random.nextInt(4); i > 0; i--) {
                    sync.addPods(pod(random)).addContainers(container(random));
                }
                yield sync.build().toByteArray();
            }
            case 2 -> ConfigureRequest.newBuilder().setConfig(text(random, "")).setRuntimeName(text(random, ""))
                    .setRuntimeVersion(text(random, "")).setRequestTimeout(random.nextLong()).build().toByteArray();
            default -> Request.newBuilder().setService(text(random, "nri.pkg.api.v1alpha1.Plugin")).setMethod(text(random, ""))
                    .setPayload(ByteString.copyFrom(container(random).toByteArray())).setTimeoutNano(random.nextLong()).build()
                    .toByteArray();
        };
    }

    private static void decode(int kind, byte[] bytes) throws NriProtocolException {
        ProtoReader in = ObjectDecoderTest.reader(bytes);
        switch (kind) {
            case 0 -> PluginMessages.stateChange(in);
            case 1 -> PluginMessages.synchronize(in);
            case 2 -> PluginMessages.configure(in);
            default -> {
                PluginMessages.Call call = PluginMessages.call(in);
                new ObjectDecoder().container(ObjectDecoderTest.reader(bytes).reader(call.payload()));
            }
        }
    }

    /** A varint's bytes. */
    private static byte[] varint(long value) {
        byte[] out = new byte[10];
        int n = 0;
        while ((value & ~0x7fL) != 0) {
            out[n++] = (byte) ((value & 0x7f) | 0x80);
            value >>>= 7;
        }
        out[n++] = (byte) value;
        return Arrays.copyOf(out, n);
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void mutatedMessagesAnswerOrFailWithTheDecodersOwnError(long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        int kind = random.nextInt(4);
        byte[] bytes = message(random, kind);
        for (int i = 1 + random.nextInt(3); i > 0 && bytes.length > 0; i--) {
            int at = random.nextInt(bytes.length);
            switch (random.nextInt(4)) {
                case 0 -> bytes[at] ^= (byte) (1 << random.nextInt(8));
                case 1 -> {
                    byte[] v = varint(EXTREMES[random.nextInt(EXTREMES.length)]);
                    byte[] spliced = new byte[bytes.length + v.length];
                    System.arraycopy(bytes, 0, spliced, 0, at);
                    System.arraycopy(v, 0, spliced, at, v.length);
                    System.arraycopy(bytes, at, spliced, at + v.length, bytes.length - at);
                    bytes = spliced;
                }
                case 2 -> bytes = Arrays.copyOf(bytes, at);
                default -> bytes[at] = (byte) random.nextInt(256);
            }
        }
        byte[] input = bytes;
        assertTimeoutPreemptively(HANG, () -> {
            long allocated = ObjectDecoderTest.allocatedBy(() -> {
                try {
                    decode(kind, input);
                } catch (NriProtocolException expected) {
                    // the decoder's own error
                }
            });
            assertThat(allocated).as("bytes allocated decoding %d mutated bytes", input.length).isLessThan(32L * input.length + (64 << 10));
        });
    }
}
