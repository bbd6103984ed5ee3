package io.driveralias.agent.overlay;

import io.driveralias.agent.core.GpuRequest;
import java.util.Map;
import java.util.Optional;

/** What the create-time seeder asks of the host's driver (the port it owns; Main implements it over repair.HostDriverFiles). */
public interface HostDriver {

    /** The SONAME of the host's own driver file that {@code hostPath} leads to; empty for any other file. */
    Optional<String> sonameAt(String hostPath);

    /**
     * The host's driver files a GPU runtime added to an earlier container that asked as
     * {@code gpu} does: file name to SONAME; empty before any such container started.
     */
    Map<String, String> runtimeFiles(GpuRequest gpu);

    /** The version of the host's driver, if known. */
    Optional<String> driverVersion();
}
