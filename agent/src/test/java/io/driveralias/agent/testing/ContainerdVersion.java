package io.driveralias.agent.testing;

import java.nio.file.Path;
import java.util.Optional;

/**
 * The containerd releases the tests run side by side: Debian bookworm's own (1.6, the system's
 * binaries, past its end of life and without NRI), and the newer ones unpacked from trixie (1.7,
 * NRI opt-in) and sid (2.1, NRI on by default) into the fixture cache by prepare-fixtures.sh, never
 * installed. Each uses its own containerd, ctr and containerd-shim-runc-v2, and the system's runc
 * (1.1.5: the newer Debian runc needs glibc 2.38).
 */
public enum ContainerdVersion {
    V1_6(null),
    V1_7("trixie/containerd"),
    V2_1("sid/containerd");

    private final String fixture;

    ContainerdVersion(String fixture) {
        this.fixture = fixture;
    }

    /** Where its binaries are: the fixture's usr/bin, or none for the system's (on PATH). */
    public Optional<Path> binDir() {
        return fixture == null ? Optional.empty() : Optional.of(RealDriver.cache().resolve("runtimes/" + fixture + "/usr/bin"));
    }

    public String binary(String name) {
        return binDir().map(d -> d.resolve(name).toString()).orElse(name);
    }

    /** Whether this release has NRI (the harness turns it on where it is opt-in). */
    public boolean hasNri() {
        return this != V1_6;
    }

    /** Its configuration file's format: version 2 up to 1.7, version 3 from 2.0. */
    public int configVersion() {
        return this == V2_1 ? 3 : 2;
    }
}
