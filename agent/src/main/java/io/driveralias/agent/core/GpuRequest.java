package io.driveralias.agent.core;

import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * What a container's configuration asks of the NVIDIA runtime, which adds the driver's files
 * itself, without any mount in the configuration: a Docker device request ({@code --gpus},
 * served by NVIDIA's hook under any runtime), or {@code NVIDIA_VISIBLE_DEVICES} in the
 * environment of a container run by a GPU runtime ({@code --runtime nvidia}, or the daemon's
 * default runtime; the Kubernetes device plugin sets the variable).
 *
 * @param runtime          the OCI runtime Docker runs it with, the daemon's default filled in
 * @param visibleDevices   the value of {@code NVIDIA_VISIBLE_DEVICES} (the last one), if set
 * @param gpuDeviceRequest a device request for the {@code nvidia} driver or the {@code gpu} capability
 * @param capabilities     {@code NVIDIA_DRIVER_CAPABILITIES}, which decides which libraries the
 *                         runtime adds: sorted, without blanks; empty when unset (the runtime's default)
 */
public record GpuRequest(String runtime, Optional<String> visibleDevices, boolean gpuDeviceRequest,
                         String capabilities) {

    /** Nothing asked of the runtime (a container whose driver files, if any, are bind mounts). */
    public static final GpuRequest NONE = new GpuRequest("", Optional.empty(), false, "");

    private static final String VARIABLE = "NVIDIA_VISIBLE_DEVICES=";
    private static final String CAPABILITIES = "NVIDIA_DRIVER_CAPABILITIES=";

    /** From a container's environment ({@code NAME=value} strings), its runtime and device requests. */
    public static GpuRequest of(String runtime, List<String> environment, boolean gpuDeviceRequest) {
        return new GpuRequest(runtime, last(environment, VARIABLE), gpuDeviceRequest,
                last(environment, CAPABILITIES).map(GpuRequest::normalized).orElse(""));
    }

    /**
     * True when the runtime will add the driver's files at start. {@code void} and an empty
     * value mean "behave as runc"; {@code none} still gets the driver's libraries (no device),
     * so it counts.
     */
    public boolean addsDriverFiles(Set<String> gpuRuntimes) {
        if (gpuDeviceRequest) {
            return true;
        }
        return gpuRuntimes.contains(runtime) && visibleDevices.filter(v -> !v.isEmpty() && !v.equals("void")).isPresent();
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

    /** A device request asks for NVIDIA's GPUs: its driver is {@code nvidia}, or a capability set names {@code gpu}. */
    public static boolean isGpuDeviceRequest(String driver, List<List<String>> capabilities) {
        return driver.equals("nvidia") || capabilities.stream().anyMatch(set -> set.contains("gpu"));
    }
}
