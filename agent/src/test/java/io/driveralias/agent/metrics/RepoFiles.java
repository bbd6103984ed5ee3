package io.driveralias.agent.metrics;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** Files of the repository (manifests, dashboard, README), wherever the build runs from. */
public final class RepoFiles {

    private RepoFiles() {
    }

    /** The repository's top directory: the first one up from the working directory with k8s/ and agent/. */
    public static Path root() {
        Path dir = Path.of("").toAbsolutePath();
        for (Path d = dir; d != null; d = d.getParent()) {
            if (Files.isDirectory(d.resolve("k8s")) && Files.isDirectory(d.resolve("agent"))) {
                return d;
            }
        }
        throw new IllegalStateException("no repository root (with k8s/ and agent/) above " + dir);
    }

    public static Path path(String relative) {
        return root().resolve(relative);
    }

    public static String read(String relative) {
        try {
            return Files.readString(path(relative), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
