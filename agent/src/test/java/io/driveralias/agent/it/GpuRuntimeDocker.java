package io.driveralias.agent.it;

import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.DockerRelease;
import io.driveralias.agent.testing.RealDriver;
import io.driveralias.agent.testing.RealDriver.Arch;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * A private dockerd with a test OCI runtime {@code gpu} ({@code src/test/fixtures/gpu-runtime.sh})
 * that adds bind mounts of NVIDIA's real versioned files to the bundle of every container whose
 * environment asks for GPUs, then runs runc: what the NVIDIA runtime does (CDI mode, or its
 * legacy hook), so that {@code docker inspect} shows no mount at all.
 */
final class GpuRuntimeDocker {

    private GpuRuntimeDocker() {
    }

    /** Starts the daemon; {@code tmp} holds its launcher. The caller closes it. */
    static DockerHarness start(Path tmp) {
        return DockerHarness.startAnother("--add-runtime", "gpu=" + launcher(tmp));
    }

    /** A daemon of {@code release}, in overlay2 or containerd's image store, with the runtime {@code gpu}. */
    static DockerHarness start(Path tmp, DockerRelease release, boolean imageStore) {
        return DockerHarness.start(release, imageStore, "--add-runtime", "gpu=" + launcher(tmp));
    }

    private static Path launcher(Path tmp) {
        try {
            Path script = RealDriver.moduleDir().resolve("src/test/fixtures/gpu-runtime.sh");
            Path launcher = tmp.resolve("gpu-runtime");
            Files.writeString(launcher, "#!/bin/sh\nexec bash '" + script + "' '" + RealDriver.libraryDir(Arch.AMD64) + "' '"
                    + RealContainers.LIB_DIR + "' '" + RealDriver.nvidiaSmi(Arch.AMD64) + "' \"$@\"\n");
            Files.setPosixFilePermissions(launcher, PosixFilePermissions.fromString("rwxr-xr-x"));
            return launcher;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
