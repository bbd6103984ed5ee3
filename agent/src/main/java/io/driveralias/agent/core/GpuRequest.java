package io.driveralias.agent.core;

import java.util.List;
import java.util.Optional;

/**
 * What a container's configuration asks for in the way of a GPU, in any of the ways a runtime
 * knows: a device request ({@code docker run --gpus}, or a CDI device {@code nvidia.com/gpu=...},
 * served by NVIDIA's hook or runtime), {@code NVIDIA_VISIBLE_DEVICES} in the environment of a
 * container run by a GPU runtime ({@code --runtime nvidia}, the daemon's default runtime, a
 * Kubernetes RuntimeClass; the device plugin sets the variable), or NVIDIA's device nodes
 * ({@code /dev/nvidia*}) given to it. The first two make the runtime add the driver's files
 * itself, without any mount in the configuration.
 *
 * @param runtime        the runtime it runs with, as its runtime names it (for messages)
 * @param gpuRuntime     that runtime is one of NVIDIA's: it honours {@code NVIDIA_VISIBLE_DEVICES}
 * @param visibleDevices the value of {@code NVIDIA_VISIBLE_DEVICES} (the last one), if set
 * @param deviceRequest  a device request for the {@code nvidia} driver, the {@code gpu} capability or an NVIDIA CDI device
 * @param deviceNodes    NVIDIA's device nodes ({@code /dev/nvidia*}) are given to it
 * @param capabilities   {@code NVIDIA_DRIVER_CAPABILITIES}, which decides which libraries the
 *                       runtime adds: sorted, without blanks; empty when unset (the runtime's default)
 */
public record GpuRequest(String runtime, boolean gpuRuntime, Optional<String> visibleDevices, boolean deviceRequest,
                         boolean deviceNodes, String capabilities) {

    /** Nothing asked for (a container whose driver files, if any, are bind mounts). */
    public static final GpuRequest NONE = new GpuRequest("", false, Optional.empty(), false, false, "");

    private static final String VARIABLE = "NVIDIA_VISIBLE_DEVICES=";
    private static final String CAPABILITIES = "NVIDIA_DRIVER_CAPABILITIES=";

    /** From a container's environment ({@code NAME=value} strings), its runtime, device requests and device nodes. */
    public static GpuRequest of(String runtime, boolean gpuRuntime, List<String> environment, boolean deviceRequest,
                                boolean deviceNodes) {
        return new GpuRequest(runtime, gpuRuntime, last(environment, VARIABLE), deviceRequest, deviceNodes,
                last(environment, CAPABILITIES).map(GpuRequest::normalized).orElse(""));
    }

    /**
     * True when the runtime will add the driver's files at start. {@code void} and an empty
     * value mean "behave as runc"; {@code none} still gets the driver's libraries (no device),
     * so it counts.
     */
    public boolean addsDriverFiles() {
        if (deviceRequest) {
            return true;
        }
        return gpuRuntime && visibleDevices.filter(v -> !v.isEmpty() && !v.equals("void")).isPresent();
    }

    /** True when the container asks for a GPU in any way its runtime understands. */
    public boolean requested() {
        return deviceNodes || addsDriverFiles();
    }

    /** The value of the last {@code NVIDIA_VISIBLE_DEVICES} in an environment ({@code NAME=value} strings). */
    public static Optional<String> visibleDevices(List<String> environment) {
        return last(environment, VARIABLE);
    }

    private static Optional<String> last(List<String> environment, String prefix) {
        Optional<String> value = Optional.empty();
        for (String entry : environment) {
            if (entry.startsWith(prefix)) {
                value = Optional.of(entry.substring(prefix.length()));
            }
        }
        return value;
    }

    /** "utility, compute" and "compute,utility" ask for the same files. */
    private static String normalized(String capabilities) {
        return java.util.Arrays.stream(capabilities.split(",")).map(String::trim).filter(c -> !c.isEmpty())
                .distinct().sorted().collect(java.util.stream.Collectors.joining(","));
    }

    /**
     * A device request asks for NVIDIA's GPUs: its driver is {@code nvidia}, a capability set
     * names {@code gpu}, or it names an NVIDIA CDI device ({@code nvidia.com/gpu=all}).
     */
    public static boolean isGpuDeviceRequest(String driver, List<List<String>> capabilities, List<String> deviceIds) {
        return driver.equals("nvidia") || capabilities.stream().anyMatch(set -> set.contains("gpu"))
                || deviceIds.stream().anyMatch(GpuRequest::isNvidiaCdiDevice);
    }

    /** What NVIDIA's CDI device names start with: their vendor. */
    public static final String NVIDIA_CDI_VENDOR = "nvidia.com/";

    /** A CDI device name of NVIDIA's kinds ({@code nvidia.com/gpu=0}, {@code nvidia.com/mig=...}). */
    public static boolean isNvidiaCdiDevice(String name) {
        return name.startsWith(NVIDIA_CDI_VENDOR);
    }

    /** One of NVIDIA's device nodes: {@code /dev/nvidia0}, {@code /dev/nvidiactl}, {@code /dev/nvidia-uvm}, .... */
    public static boolean isNvidiaDeviceNode(String path) {
        return path.startsWith("/dev/nvidia");
    }
}
