package io.driveralias.agent.docker;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.driveralias.agent.core.GpuRequest;
import java.io.IOException;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** What a container asks of a GPU runtime, from inspect's JSON or Docker's own files. */
class ContainerInspectParserTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    private static JsonNode json(String text) throws IOException {
        return JSON.readTree(text);
    }

    private static ContainerInspectParser.Runtimes defaultRuntime(String name) {
        return new ContainerInspectParser.Runtimes(name, java.util.Set.of("nvidia"));
    }

    @Test
    void runtimeEnvironmentAndDeviceRequestsAreRead() throws IOException {
        JsonNode inspect = json("{\"Id\":\"c\",\"Config\":{\"Env\":[\"PATH=/bin\",\"NVIDIA_VISIBLE_DEVICES=0\","
                + "\"NVIDIA_DRIVER_CAPABILITIES=utility,compute\"]},"
                + "\"HostConfig\":{\"Runtime\":\"nvidia\",\"DeviceRequests\":[{\"Driver\":\"\",\"Count\":-1,"
                + "\"Capabilities\":[[\"gpu\"]]}]}}");

        assertThat(ContainerInspectParser.parse(inspect, defaultRuntime("runc")).gpu())
                .isEqualTo(new GpuRequest("nvidia", true, Optional.of("0"), true, false, "compute,utility"));
    }

    @Test
    void nvidiaDevicesCdiDevicesAndThePodSandboxAreRead() throws IOException {
        JsonNode inspect = json("{\"Id\":\"c\",\"Config\":{\"Labels\":{\"io.kubernetes.docker.type\":\"podsandbox\"}},"
                + "\"HostConfig\":{\"Devices\":[{\"PathOnHost\":\"/dev/nvidia0\",\"PathInContainer\":\"/dev/nvidia0\"}],"
                + "\"DeviceRequests\":[{\"Driver\":\"cdi\",\"DeviceIDs\":[\"nvidia.com/gpu=all\"]}]},"
                + "\"GraphDriver\":{\"Name\":\"overlay2\",\"Data\":{\"UpperDir\":\"/u\",\"LowerDir\":\"/l1:/l2\",\"MergedDir\":\"/m\"}}}");

        var info = ContainerInspectParser.parse(inspect, defaultRuntime("runc"));
        assertThat(info.gpu().deviceNodes()).isTrue();
        assertThat(info.gpu().deviceRequest()).isTrue();
        assertThat(info.sandbox()).isTrue();
        assertThat(info.overlay()).contains(new io.driveralias.agent.core.ContainerInfo.OverlayLayers("/u", "/l1:/l2", "/m"));
    }

    @Test
    void aContainerWithoutARuntimeRunsTheDaemonsDefault() throws IOException {
        JsonNode inspect = json("{\"Id\":\"c\",\"Config\":{\"Env\":[\"NVIDIA_VISIBLE_DEVICES=all\"]},"
                + "\"HostConfig\":{\"DeviceRequests\":null}}");

        assertThat(ContainerInspectParser.parse(inspect, defaultRuntime("nvidia")).gpu())
                .isEqualTo(new GpuRequest("nvidia", true, Optional.of("all"), false, false, ""));
    }

    @Test
    void oddShapesAskForNothing() throws IOException {
        JsonNode inspect = json("{\"Id\":\"c\",\"Config\":{\"Env\":\"NVIDIA_VISIBLE_DEVICES=all\"},"
                + "\"HostConfig\":{\"Runtime\":7,\"DeviceRequests\":[{\"Capabilities\":\"gpu\"},{\"Capabilities\":[[1]]}]}}");

        GpuRequest gpu = ContainerInspectParser.parse(inspect, defaultRuntime("runc")).gpu();
        assertThat(gpu.visibleDevices()).isEmpty();
        assertThat(gpu.deviceRequest()).isFalse();
        assertThat(gpu.requested()).isFalse();
    }

    @Test
    void aListedContainerReadsDockersFiles() throws IOException {
        JsonNode listed = json("{\"Id\":\"c\",\"Names\":[\"/n\"],\"Image\":\"i\",\"Mounts\":[]}");
        JsonNode hostConfig = json("{\"ReadonlyRootfs\":true,\"Runtime\":\"gpu\"}");
        JsonNode config = json("{\"Env\":[\"NVIDIA_VISIBLE_DEVICES=all\"]}");

        var info = ContainerInspectParser.listed(listed, "overlay2", java.util.Map.of(), hostConfig, config, defaultRuntime("runc"));
        assertThat(info.name()).isEqualTo("n");
        assertThat(info.readOnlyRootfs()).isTrue();
        assertThat(info.gpu()).isEqualTo(new GpuRequest("gpu", false, Optional.of("all"), false, false, ""));
    }
}
