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

    @Test
    void runtimeEnvironmentAndDeviceRequestsAreRead() throws IOException {
        JsonNode inspect = json("{\"Id\":\"c\",\"Config\":{\"Env\":[\"PATH=/bin\",\"NVIDIA_VISIBLE_DEVICES=0\","
                + "\"NVIDIA_DRIVER_CAPABILITIES=utility,compute\"]},"
                + "\"HostConfig\":{\"Runtime\":\"nvidia\",\"DeviceRequests\":[{\"Driver\":\"\",\"Count\":-1,"
                + "\"Capabilities\":[[\"gpu\"]]}]}}");

        assertThat(ContainerInspectParser.parse(inspect, "runc").gpu())
                .isEqualTo(new GpuRequest("nvidia", Optional.of("0"), true, "compute,utility"));
    }

    @Test
    void aContainerWithoutARuntimeRunsTheDaemonsDefault() throws IOException {
        JsonNode inspect = json("{\"Id\":\"c\",\"Config\":{\"Env\":[\"NVIDIA_VISIBLE_DEVICES=all\"]},"
                + "\"HostConfig\":{\"DeviceRequests\":null}}");

        assertThat(ContainerInspectParser.parse(inspect, "nvidia").gpu())
                .isEqualTo(new GpuRequest("nvidia", Optional.of("all"), false, ""));
    }

    @Test
    void oddShapesAskForNothing() throws IOException {
        JsonNode inspect = json("{\"Id\":\"c\",\"Config\":{\"Env\":\"NVIDIA_VISIBLE_DEVICES=all\"},"
                + "\"HostConfig\":{\"Runtime\":7,\"DeviceRequests\":[{\"Capabilities\":\"gpu\"},{\"Capabilities\":[[1]]}]}}");

        GpuRequest gpu = ContainerInspectParser.parse(inspect, "runc").gpu();
        assertThat(gpu.visibleDevices()).isEmpty();
        assertThat(gpu.gpuDeviceRequest()).isFalse();
    }

    @Test
    void aListedContainerReadsDockersFiles() throws IOException {
        JsonNode listed = json("{\"Id\":\"c\",\"Names\":[\"/n\"],\"Image\":\"i\",\"Mounts\":[]}");
        JsonNode hostConfig = json("{\"ReadonlyRootfs\":true,\"Runtime\":\"gpu\"}");
        JsonNode config = json("{\"Env\":[\"NVIDIA_VISIBLE_DEVICES=all\"]}");

        var info = ContainerInspectParser.listed(listed, "overlay2", java.util.Map.of(), hostConfig, config, "runc");
        assertThat(info.name()).isEqualTo("n");
        assertThat(info.readOnlyRootfs()).isTrue();
        assertThat(info.gpu()).isEqualTo(new GpuRequest("gpu", Optional.of("all"), false, ""));
    }
}
