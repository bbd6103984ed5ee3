package io.driveralias.agent.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The Docker Engines the ITs run side by side: Debian 12's (the system's {@code docker.io}
 * 20.10, with the containerd it starts itself), and Debian 13's and sid's (26.1 and 28.5) unpacked
 * from their packages by {@code prepare-fixtures.sh}, never installed, each on a private containerd
 * of its suite (1.7 and 2.1: they need one of at least 1.7), given to dockerd with
 * {@code --containerd}, as Debian's packages give it the node's. runc is always the system's.
 */
public enum DockerRelease {
    DEBIAN_12("20.10", ""),
    DEBIAN_13("26.1", "trixie"),
    DEBIAN_SID("28.5", "sid");

    private final String version;
    private final String suite;

    DockerRelease(String version, String suite) {
        this.version = version;
        this.suite = suite;
    }

    /** "26.1". */
    public String version() {
        return version;
    }

    /** Docker keeps images in containerd on demand from 24 on ({@code "features": {"containerd-snapshotter": true}}). */
    public boolean hasImageStore() {
        return !suite.isEmpty();
    }

    /** Whether dockerd runs on a containerd of its own suite (it starts the system's 1.6 itself otherwise). */
    boolean needsContainerd() {
        return !suite.isEmpty();
    }

    /** The unpacked packages of the suite: {@code docker.io}, {@code docker-cli}, {@code containerd}. */
    Path packageRoot(String pkg) {
        Path root = RealDriver.cache().resolve("runtimes").resolve(suite).resolve(pkg);
        if (!Files.isRegularFile(root.resolve(".complete"))) {
            throw new AssertionError(pkg + " of " + suite + " is not unpacked in " + root + " (prepare-fixtures.sh)");
        }
        return root;
    }

    String dockerd() {
        return suite.isEmpty() ? "dockerd" : packageRoot("docker.io").resolve("usr/sbin/dockerd").toString();
    }

    /** Directories dockerd's and containerd's helpers are looked up in (docker-proxy, docker-init, the shims), first. */
    List<String> binDirectories() {
        if (suite.isEmpty()) {
            return List.of();
        }
        return List.of(packageRoot("docker.io").resolve("usr/sbin").toString(), packageRoot("docker.io").resolve("usr/bin")
                .toString(), packageRoot("containerd").resolve("usr/bin").toString());
    }

    /** The containerd package's version ({@code 2.1.9~ds1-1}), for the table of results. */
    String containerdVersion() {
        try {
            return Files.readString(packageRoot("containerd").resolve(".version")).trim();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** containerd 2's configuration is version 3; 1.7's, version 2. */
    boolean containerd2() {
        return containerdVersion().startsWith("2.");
    }
}
