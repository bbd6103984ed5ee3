package io.driveralias.agent.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.core.JsonParser;
import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.GpuRequest;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Docker's answers about a container, read as they stream in: what a container asks of a GPU runtime, and the rest the agent uses. */
class ContainerInspectParserTest {

    private static final ContainerInspectParser.Runtimes RUNC = defaultRuntime("runc");

    private static ContainerInspectParser.Runtimes defaultRuntime(String name) {
        return new ContainerInspectParser.Runtimes(name, Set.of("nvidia"));
    }

    private static InputStream text(String json) {
        return new ByteArrayInputStream(json.getBytes(StandardCharsets.UTF_8));
    }

    private static ContainerInfo inspect(InputStream json, ContainerInspectParser.Runtimes runtimes) throws IOException {
        try (JsonParser p = JsonReading.parser(json)) {
            return ContainerInspectParser.parse(p, runtimes);
        }
    }

    private static ContainerInfo inspect(String json, ContainerInspectParser.Runtimes runtimes) throws IOException {
        return inspect(text(json), runtimes);
    }

    @Test
    void aWholeAnswerOfDockersIsReadForTheFieldsUsed() throws IOException {
        ContainerInfo info;
        try (InputStream in = getClass().getResourceAsStream("/docker/inspect-gpu-container.json")) {
            info = inspect(in, RUNC);
        }

        assertThat(info.id()).isEqualTo("4f1b3c9d2a7e8f60b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2");
        assertThat(info.name()).isEqualTo("k8s_cuda_trainer-7d9f_ml_0b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e_0");
        assertThat(info.image()).isEqualTo("nvidia/cuda:12.2.0-base-ubuntu22.04");
        assertThat(info.user()).isEqualTo("1000:1000");
        assertThat(info.running()).isTrue();
        assertThat(info.pid()).isEqualTo(48213);
        assertThat(info.startedAt()).contains(Instant.parse("2024-05-02T09:14:07.345678901Z"));
        assertThat(info.sandbox()).isFalse();
        assertThat(info.readOnlyRootfs()).isFalse();
        assertThat(info.storage()).isEqualTo("overlay2");
        assertThat(info.overlay()).contains(new ContainerInfo.OverlayLayers("/var/lib/docker/overlay2/3c1e/diff",
                "/var/lib/docker/overlay2/3c1e-init/diff:/var/lib/docker/overlay2/a9d2/diff",
                "/var/lib/docker/overlay2/3c1e/merged"));
        assertThat(info.mounts()).containsExactly(
                new ContainerInfo.Mount("bind", "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05",
                        "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05", false),
                new ContainerInfo.Mount("volume", "/var/lib/docker/volumes/cache/_data", "/cache", true));
        // Only the kubelet's labels: the image's and the annotations are none of the agent's business.
        assertThat(info.labels()).containsOnlyKeys("io.kubernetes.container.name", "io.kubernetes.docker.type",
                "io.kubernetes.pod.name", "io.kubernetes.pod.namespace", "io.kubernetes.pod.uid");
        assertThat(info.gpu()).isEqualTo(new GpuRequest("nvidia", true, Optional.of("GPU-1a2b3c4d"), true, true,
                "compute,utility"));
    }

    @Test
    void runtimeEnvironmentAndDeviceRequestsAreRead() throws IOException {
        String inspect = "{\"Id\":\"c\",\"Config\":{\"Env\":[\"PATH=/bin\",\"NVIDIA_VISIBLE_DEVICES=0\","
                + "\"NVIDIA_DRIVER_CAPABILITIES=utility,compute\"]},"
                + "\"HostConfig\":{\"Runtime\":\"nvidia\",\"DeviceRequests\":[{\"Driver\":\"\",\"Count\":-1,"
                + "\"Capabilities\":[[\"gpu\"]]}]}}";

        assertThat(inspect(inspect, RUNC).gpu())
                .isEqualTo(new GpuRequest("nvidia", true, Optional.of("0"), true, false, "compute,utility"));
    }

    @Test
    void nvidiaDevicesCdiDevicesAndThePodSandboxAreRead() throws IOException {
        String inspect = "{\"Id\":\"c\",\"Name\":\"/k8s_POD_p_ns_u1_0\",\"Config\":{\"Labels\":{\"io.kubernetes.docker.type\":"
                + "\"podsandbox\",\"io.kubernetes.pod.name\":\"p\",\"io.kubernetes.pod.namespace\":\"ns\",\"io.kubernetes.pod.uid\":\"u1\"}},"
                + "\"HostConfig\":{\"Devices\":[{\"PathOnHost\":\"/dev/nvidia0\",\"PathInContainer\":\"/dev/nvidia0\"}],"
                + "\"DeviceRequests\":[{\"Driver\":\"cdi\",\"DeviceIDs\":[\"nvidia.com/gpu=all\"]}]},"
                + "\"GraphDriver\":{\"Name\":\"overlay2\",\"Data\":{\"UpperDir\":\"/u\",\"LowerDir\":\"/l1:/l2\",\"MergedDir\":\"/m\"}}}";

        ContainerInfo info = inspect(inspect, RUNC);
        assertThat(info.gpu().deviceNodes()).isTrue();
        assertThat(info.gpu().deviceRequest()).isTrue();
        assertThat(info.sandbox()).isTrue();
        assertThat(info.overlay()).contains(new ContainerInfo.OverlayLayers("/u", "/l1:/l2", "/m"));
    }

    @Test
    void aContainerWithoutARuntimeRunsTheDaemonsDefault() throws IOException {
        String inspect = "{\"Id\":\"c\",\"Config\":{\"Env\":[\"NVIDIA_VISIBLE_DEVICES=all\"]},"
                + "\"HostConfig\":{\"DeviceRequests\":null}}";

        assertThat(inspect(inspect, defaultRuntime("nvidia")).gpu())
                .isEqualTo(new GpuRequest("nvidia", true, Optional.of("all"), false, false, ""));
    }

    @Test
    void oddShapesAskForNothing() throws IOException {
        String inspect = "{\"Id\":\"c\",\"Config\":{\"Env\":\"NVIDIA_VISIBLE_DEVICES=all\"},"
                + "\"HostConfig\":{\"Runtime\":7,\"DeviceRequests\":[{\"Capabilities\":\"gpu\"},{\"Capabilities\":[[1]]}]}}";

        GpuRequest gpu = inspect(inspect, RUNC).gpu();
        assertThat(gpu.visibleDevices()).isEmpty();
        assertThat(gpu.deviceRequest()).isFalse();
        assertThat(gpu.requested()).isFalse();
    }

    @Test
    void valuesOfAnotherTypeCountAsAbsent() throws IOException {
        String inspect = "{\"Id\":\"c\",\"Name\":[\"/n\"],\"State\":{\"Running\":\"true\",\"Pid\":\"42\",\"StartedAt\":7},"
                + "\"Mounts\":{\"Type\":\"bind\"},\"GraphDriver\":{\"Name\":\"overlay2\",\"Data\":{\"UpperDir\":5,\"MergedDir\":[\"/m\"]}},"
                + "\"Config\":{\"Image\":{\"x\":1},\"Labels\":[\"io.kubernetes.pod.name\"],\"User\":0,"
                + "\"Env\":[1,{\"NVIDIA_VISIBLE_DEVICES\":\"all\"},[\"NVIDIA_VISIBLE_DEVICES=all\"],null,\"NVIDIA_VISIBLE_DEVICES=0\"]},"
                + "\"HostConfig\":{\"ReadonlyRootfs\":\"true\",\"Devices\":[\"/dev/nvidia0\",{\"PathOnHost\":[\"/dev/nvidia0\"]}],"
                + "\"DeviceRequests\":{\"Driver\":\"nvidia\"}},\"State2\":{\"Pid\":99999999999}}";

        ContainerInfo info = inspect(inspect, RUNC);
        assertThat(info.name()).isEmpty();
        assertThat(info.running()).isFalse();
        assertThat(info.pid()).isZero();
        assertThat(info.startedAt()).isEmpty();
        assertThat(info.mounts()).isEmpty();
        assertThat(info.overlay()).contains(new ContainerInfo.OverlayLayers("", "", ""));
        assertThat(info.image()).isEmpty();
        assertThat(info.labels()).isEmpty();
        assertThat(info.user()).isEmpty();
        assertThat(info.readOnlyRootfs()).isFalse();
        assertThat(info.gpu()).isEqualTo(new GpuRequest("runc", false, Optional.of("0"), false, false, ""));
        assertThat(inspect("{\"State\":{\"Pid\":99999999999}}", RUNC).pid()).as("a pid beyond an int").isZero();
    }

    @Test
    void aHugeEnvironmentCostsNoMoreThanItsGpuVariables() throws IOException {
        StringBuilder env = new StringBuilder("{\"Id\":\"c\",\"Config\":{\"Env\":[");
        for (int i = 0; i < 150_000; i++) {
            env.append("\"VARIABLE_").append(i).append("=some value that takes room\",");
        }
        env.append("\"NVIDIA_VISIBLE_DEVICES=all\"]},\"HostConfig\":{\"Runtime\":\"nvidia\"}}");
        byte[] json = env.toString().getBytes(StandardCharsets.UTF_8);
        assertThat(json.length).isGreaterThan(6_000_000);

        inspect(new ByteArrayInputStream(json), RUNC); // classes loaded, buffers recycled
        long before = allocatedBytes();
        ContainerInfo info = inspect(new ByteArrayInputStream(json), RUNC);
        long allocated = allocatedBytes() - before;

        assertThat(info.gpu().visibleDevices()).contains("all");
        assertThat(allocated).as("bytes allocated to read %d bytes of environment", json.length).isLessThan(1 << 20);
    }

    @Test
    void thousandsOfLabelsKeepOnlyTheKubelets() throws IOException {
        StringBuilder labels = new StringBuilder("{\"Name\":\"/k8s_main_p_ns_u1_0\",\"Config\":{\"Labels\":{");
        for (int i = 0; i < 50_000; i++) {
            labels.append("\"label.").append(i).append("\":\"value\",");
            labels.append("\"io.kubernetes.x").append(i).append("\":\"value\",");
        }
        labels.append("\"io.kubernetes.pod.name\":\"p\",\"io.kubernetes.pod.namespace\":\"ns\",\"io.kubernetes.pod.uid\":\"u1\",")
                .append("\"io.kubernetes.container.name\":\"main\"}}}");

        assertThat(inspect(labels.toString(), RUNC).labels()).isEqualTo(Map.of("io.kubernetes.pod.name", "p",
                "io.kubernetes.pod.namespace", "ns", "io.kubernetes.pod.uid", "u1", "io.kubernetes.container.name", "main"));
    }

    /**
     * Docker copies an image's labels onto its containers: labels that name another pod, or call
     * the container a sandbox, count only where the kubelet's own name for the container says the same.
     */
    @ParameterizedTest
    @CsvSource({
        "/gpu-job, container, p",
        "/k8s_main_victim_kube-system_u1_0, container, p",
        "/k8s_other_p_ns_u1_0, container, p",
        "/k8s_main_p_ns_u1_0, podsandbox, p",
        "/k8s_POD_p_ns_u2_0, podsandbox, p",
        "/k8s_main_p_ns_u1, container, p"})
    void labelsThatTheContainersNameDoesNotBearOutNameNoPodAndNoSandbox(String name, String type, String pod) throws IOException {
        String inspect = "{\"Id\":\"c\",\"Name\":\"" + name + "\",\"Config\":{\"Labels\":{\"io.kubernetes.docker.type\":\"" + type
                + "\",\"io.kubernetes.pod.name\":\"" + pod + "\",\"io.kubernetes.pod.namespace\":\"ns\",\"io.kubernetes.pod.uid\":\"u1\","
                + "\"io.kubernetes.container.name\":\"main\"}}}";
        ContainerInfo info = inspect(inspect, RUNC);
        assertThat(info.labels()).isEmpty();
        assertThat(info.sandbox()).isFalse();
    }

    @Test
    void aKeptValueOverItsBoundRefusesTheDescription() {
        String inspect = "{\"Id\":\"c\",\"Config\":{\"Env\":[\"NVIDIA_VISIBLE_DEVICES=" + "GPU-x,".repeat(2000) + "\"]}}";
        assertThatThrownBy(() -> inspect(inspect, RUNC)).isInstanceOf(io.driveralias.agent.json.DescriptionTooLarge.class);
        StringBuilder mounts = new StringBuilder("{\"Id\":\"c\",\"Mounts\":[");
        for (int i = 0; i < 2000; i++) {
            mounts.append(i == 0 ? "" : ",").append("{\"Type\":\"bind\",\"Source\":\"/s\",\"Destination\":\"/d").append(i).append("\"}");
        }
        assertThatThrownBy(() -> inspect(mounts.append("]}").toString(), RUNC))
                .isInstanceOf(io.driveralias.agent.json.DescriptionTooLarge.class);
    }

    @Test
    void deepNestingIsRefusedWithoutTheStack() {
        String deep = "[".repeat(100_000) + "]".repeat(100_000);
        for (String where : List.of("{\"Config\":{\"Env\":%s}}", "{\"NetworkSettings\":%s}", "{\"Mounts\":%s}",
                "{\"HostConfig\":{\"DeviceRequests\":[{\"Capabilities\":%s}]}}")) {
            assertThatThrownBy(() -> inspect(where.formatted(deep), RUNC)).as(where)
                    .isInstanceOf(IOException.class).hasMessageContaining("nesting depth");
        }
    }

    @Test
    void truncatedOrOtherJsonIsAnError() {
        assertThatThrownBy(() -> inspect("{\"Id\":\"c\",\"Config\":{\"Env\":[\"NVIDIA_VISIBLE_DEVICES=all\"", RUNC))
                .isInstanceOf(IOException.class);
        assertThatThrownBy(() -> inspect("[{\"Id\":\"c\"}]", RUNC)).isInstanceOf(IOException.class);
        assertThatThrownBy(() -> inspect("", RUNC)).isInstanceOf(IOException.class);
        assertThatThrownBy(() -> inspect("{\"Id\":\"c\",}", RUNC)).isInstanceOf(IOException.class);
    }

    @Test
    void theLastOfARepeatedFieldCounts() throws IOException {
        String inspect = "{\"Id\":\"a\",\"Id\":\"b\",\"HostConfig\":{\"Runtime\":\"runc\",\"Runtime\":\"nvidia\"},"
                + "\"Config\":{\"Env\":[\"NVIDIA_VISIBLE_DEVICES=0\",\"NVIDIA_VISIBLE_DEVICES=1\"]}}";

        ContainerInfo info = inspect(inspect, RUNC);
        assertThat(info.id()).isEqualTo("b");
        assertThat(info.gpu().runtime()).isEqualTo("nvidia");
        assertThat(info.gpu().visibleDevices()).contains("1");
    }

    @Test
    void aListedContainerReadsDockersFiles() throws IOException {
        String list = "[{\"Id\":\"other\",\"State\":\"created\"},{\"Id\":\"c\",\"State\":\"running\",\"Names\":[\"/not\"]},"
                + "{\"Id\":\"c\",\"Names\":[\"/k8s_m_p_ns_u_0\",\"/m\"],\"Image\":\"i\",\"Mounts\":[],\"State\":\"created\","
                + "\"Labels\":{\"io.kubernetes.pod.name\":\"p\",\"io.kubernetes.pod.namespace\":\"ns\",\"io.kubernetes.pod.uid\":\"u\","
                + "\"io.kubernetes.container.name\":\"m\",\"x\":\"y\"},\"Ports\":[{\"PrivatePort\":1}]}]";
        HostSettings host;
        try (JsonParser p = JsonReading.FACTORY.createParser("{\"ReadonlyRootfs\":true,\"Runtime\":\"gpu\",\"Binds\":[]}")) {
            host = HostSettings.read(p, p.nextToken());
        }
        List<String> env;
        try (JsonParser p = JsonReading.FACTORY.createParser("{\"ID\":\"c\",\"Config\":{\"Env\":[\"NVIDIA_VISIBLE_DEVICES=all\"]}}")) {
            env = ContainerInspectParser.configEnvironment(p);
        }
        Optional<ContainerInspectParser.Listed> listed;
        try (JsonParser p = JsonReading.FACTORY.createParser(list)) {
            listed = ContainerInspectParser.findCreated(p, "c");
        }

        assertThat(listed).isPresent();
        ContainerInfo info = ContainerInspectParser.created(listed.get(), "overlay2", Map.of(), host, env, RUNC);
        assertThat(info.name()).isEqualTo("k8s_m_p_ns_u_0");
        assertThat(info.labels()).containsEntry("io.kubernetes.pod.name", "p").doesNotContainKey("x");
        assertThat(info.readOnlyRootfs()).isTrue();
        assertThat(info.running()).isFalse();
        assertThat(info.gpu()).isEqualTo(new GpuRequest("gpu", false, Optional.of("all"), false, false, ""));
    }

    @Test
    void aListWithoutTheCreatedContainerFindsNothing() throws IOException {
        for (String list : List.of("[]", "[{\"Id\":\"c\",\"State\":\"exited\"}]", "[1,\"c\",[],{\"Id\":\"d\",\"State\":\"created\"}]")) {
            try (JsonParser p = JsonReading.FACTORY.createParser(list)) {
                assertThat(ContainerInspectParser.findCreated(p, "c")).as(list).isEmpty();
            }
        }
        assertThatThrownBy(() -> {
            try (JsonParser p = JsonReading.FACTORY.createParser("{\"message\":\"no\"}")) {
                ContainerInspectParser.findCreated(p, "c");
            }
        }).isInstanceOf(IOException.class);
    }

    @Test
    void aHostConfigWhoseReadOnlyFlagIsNotABooleanSaysNothingOfIt() throws IOException {
        for (String json : List.of("{}", "{\"ReadonlyRootfs\":\"false\"}", "{\"ReadonlyRootfs\":null}", "[]", "3")) {
            try (JsonParser p = JsonReading.FACTORY.createParser(json)) {
                assertThat(HostSettings.read(p, p.nextToken()).readOnlyRootfs()).as(json).isEmpty();
            }
        }
    }

    @Test
    void timesAreReadAsInstantParseReadsThem() {
        java.util.Random random = new java.util.Random(18);
        for (int i = 0; i < 20_000; i++) {
            Instant instant = Instant.ofEpochSecond(random.nextLong(-62_000_000_000L, 253_000_000_000L), random.nextInt(1_000_000_000));
            String full = instant.toString().replace("Z", "");
            String withoutFraction = full.contains(".") ? full.substring(0, full.indexOf('.')) : full;
            int digits = random.nextInt(10);
            String text = withoutFraction + (digits == 0 ? "" : "." + String.format("%09d", instant.getNano()).substring(0, digits)) + "Z";
            assertThat(DockerTime.parse(text)).as(text).contains(Instant.parse(text));
        }
        for (String odd : List.of("2024-02-30T00:00:00Z", "2024-13-01T00:00:00Z", "2024-05-02T24:00:00Z", "2024-05-02T09:14:07.Z",
                "2024-05-02T09:14:07.1234567890Z", "2024-05-02 09:14:07Z", "2024-05-02T09:14:07+02:00", "2016-12-31T23:59:60Z",
                "+2024-05-02T09:14:07Z", "2024-05-02T09:14:07", "x", "0001-01-01T00:00:00Z", "")) {
            Optional<Instant> expected;
            try {
                expected = odd.isEmpty() || odd.equals("0001-01-01T00:00:00Z") ? Optional.empty() : Optional.of(Instant.parse(odd));
            } catch (java.time.format.DateTimeParseException e) {
                expected = Optional.empty();
            }
            assertThat(DockerTime.parse(odd)).as(odd).isEqualTo(expected);
        }
    }

    private static long allocatedBytes() {
        return ((com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean()).getCurrentThreadAllocatedBytes();
    }

    @Test
    void aContainerInContainerdsImageStoreIsStoredByItsSnapshotterWhicheverFieldSaysSo() throws IOException {
        // API 1.43 to 1.51: GraphDriver names the snapshotter, with no data; 1.52 on: Storage does, GraphDriver is gone.
        String old = "{\"Id\":\"c\",\"State\":{\"Running\":false},\"GraphDriver\":{\"Data\":null,\"Name\":\"overlayfs\"}}";
        String now = "{\"Id\":\"c\",\"Storage\":{\"RootFS\":{\"Snapshot\":{\"Name\":\"overlayfs\"}}},\"State\":{}}";
        for (String json : List.of(old, now)) {
            ContainerInfo info = inspect(json, RUNC);
            assertThat(info.storage()).as(json).isEqualTo("overlayfs");
            assertThat(info.overlay()).as("its layers are containerd's to tell").isEmpty();
        }
        assertThat(inspect("{\"Id\":\"c\",\"Storage\":{\"RootFS\":[1],\"x\":{}}}", RUNC).storage()).isEmpty();
    }

    @Test
    void aStartingContainerIsFoundInTheListWhateverItsState() throws IOException {
        String list = "[{\"Id\":\"c\",\"Names\":[\"/job\"],\"Image\":\"cuda\",\"State\":\"running\"}]";
        try (JsonParser p = JsonReading.parser(text(list))) {
            assertThat(ContainerInspectParser.find(p, "c", false)).get().extracting(ContainerInspectParser.Listed::name)
                    .isEqualTo("job");
        }
        try (JsonParser p = JsonReading.parser(text(list))) {
            assertThat(ContainerInspectParser.find(p, "c", true)).as("created only").isEmpty();
        }
    }
}
