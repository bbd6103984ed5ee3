package io.driveralias.agent.repair;

import io.driveralias.agent.core.DriverVersions;
import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.fs.KernelFiles;
import io.driveralias.agent.fs.Libc;
import io.driveralias.agent.fs.OpenFlags;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

/**
 * The loaded NVIDIA kernel module's version, as the module itself writes it in
 * {@code <host-proc>/driver/nvidia/version} ("NVRM version: NVIDIA UNIX x86_64 Kernel Module
 * 535.104.05 ..."): the driver every GPU container on the node talks to, whatever user-space
 * files it loads. Read each time it is asked (a few hundred bytes the kernel makes), so that a
 * module reloaded after a driver upgrade is seen; absent when no module is loaded. A file of the
 * host's procfs, not a container path: opened by host rules.
 */
public final class KernelModule {

    /** The file is one line of about a hundred bytes, and a second one on some drivers. */
    private static final int MAX_BYTES = 4096;

    private final String hostProc;

    public KernelModule(String hostProc) {
        this.hostProc = hostProc.endsWith("/") ? hostProc.substring(0, hostProc.length() - 1) : hostProc;
    }

    /** The version, or empty when no module is loaded (or the file says none the agent can read). */
    public Optional<String> version() {
        int dir;
        try {
            dir = Libc.openHost(hostProc + "/driver/nvidia", OpenFlags.O_PATH | OpenFlags.O_DIRECTORY);
        } catch (ErrnoException e) {
            return Optional.empty();
        }
        try {
            return DriverVersions.fromProcVersion(new String(KernelFiles.read(dir, "version", MAX_BYTES),
                    StandardCharsets.ISO_8859_1));
        } catch (ErrnoException e) {
            return Optional.empty();
        } finally {
            Libc.close(dir);
        }
    }
}
