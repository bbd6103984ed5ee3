package io.driveralias.agent.testing;

import io.driveralias.agent.core.DriverLoad;
import java.util.List;
import java.util.Optional;

/** What a GPU container's loader takes, as the tests that are not about finding it need one. */
public final class DriverLoads {

    private DriverLoads() {
    }

    /** One libcuda.so.1, judged against a 535.104.05 module. */
    public static DriverLoad libcuda(DriverLoad.Source source, String path, String version, Optional<DriverLoad.Compat> compat) {
        return DriverLoad.judge(List.of(new DriverLoad.Loaded("libcuda.so.1", path, source, Optional.of(version), compat,
                "its /etc/ld.so.cache")), Optional.of("535.104.05"));
    }

    /** The 470 driver's libcuda an image left in /usr/local/lib, loaded instead of the node's 535.104.05. */
    public static DriverLoad imageCopy() {
        return libcuda(DriverLoad.Source.IMAGE, "/usr/local/lib/libcuda.so.470.256.02", "470.256.02", Optional.empty());
    }
}
