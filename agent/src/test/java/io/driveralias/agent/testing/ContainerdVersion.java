package io.driveralias.agent.testing;

import java.nio.file.Path;
import java.util.Optional;

/**
 * The containerd releases the tests run side by side: Debian bookworm's own (1.6, the system's
 * binaries, past its end of life and without NRI), and the newer ones unpacked from trixie (1.7,
 * NRI opt-in) and sid (2.1, NRI on by default) into the fixture cache by prepare-fixtures.sh, never
 * installed. Each uses its own containerd, ctr and containerd-shim-runc-v2, and the system's runc
 * (1.1.5: the newer Debian runc needs glibc 2.38).
 *
 * <p>containerd 2.3 (NRI 0.12, the dedicated StartContainer call) is in no Debian suite: its tests
 * run only where {@value #CONTAINERD_2_3} names a directory holding its {@code containerd}, {@code ctr}
 * and {@code containerd-shim-runc-v2}, built from containerd's own source (docs/platforms.md says
 * how); CI has none, and there a runtime-side double of NRI 0.12 stands in ({@code
 * nri.AdaptationRuntime}). {@link #nriReleases()} says so in the test output when it leaves it out.
 */
public enum ContainerdVersion {
    V1_6(null),
    V1_7("trixie/containerd"),
    V2_1("sid/containerd"),
    V2_3(null);

    /** The environment variable naming containerd 2.3's binaries. */
    public static final String CONTAINERD_2_3 = "DRIVER_ALIAS_CONTAINERD_2_3";

    private final String fixture;

    ContainerdVersion(String fixture) {
        this.fixture = fixture;
    }

    /** Where its binaries are: the fixture's usr/bin, containerd 2.3's given directory, or none for the system's (on PATH). */
    public Optional<Path> binDir() {
        if (this == V2_3) {
            String dir = System.getenv(CONTAINERD_2_3);
            if (dir == null || dir.isBlank()) {
                throw new IllegalStateException(CONTAINERD_2_3 + " names no directory of containerd 2.3's binaries");
            }
            return Optional.of(Path.of(dir));
        }
        return fixture == null ? Optional.empty() : Optional.of(RealDriver.cache().resolve("runtimes/" + fixture + "/usr/bin"));
    }

    /**
     * The releases the NRI tests run on: 1.7 and 2.1 always, 2.3 where its binaries are given
     * (a line in the output says when they are not, so that a run says which NRI it spoke).
     */
    public static java.util.stream.Stream<ContainerdVersion> nriReleases() {
        String dir = System.getenv(CONTAINERD_2_3);
        if (dir == null || dir.isBlank() || !java.nio.file.Files.isExecutable(Path.of(dir, "containerd"))) {
            System.out.println("[containerd] 2.3 (NRI 0.12) not run here: " + CONTAINERD_2_3 + " names no directory with its"
                    + " binaries; NRI 0.12 is covered by the runtime-side double (nri.AdaptationRuntime)");
            return java.util.stream.Stream.of(V1_7, V2_1);
        }
        return java.util.stream.Stream.of(V1_7, V2_1, V2_3);
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
        return this == V2_1 || this == V2_3 ? 3 : 2;
    }
}
