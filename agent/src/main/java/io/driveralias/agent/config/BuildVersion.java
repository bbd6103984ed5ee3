package io.driveralias.agent.config;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/**
 * The agent's version, as the build wrote it (the parent pom's {@code <version>}, through the
 * filtered resource {@code build.properties}): what {@code --version} prints, what
 * {@code driver_alias_build_info{version}} carries, and the tag agent/image/build-rootfs.sh gives
 * the image. The same from the jar and from classes, so tests see what operators see.
 */
public final class BuildVersion {

    /** What runs from classes that Maven did not build. */
    public static final String UNBUILT = "dev";

    private static final String RESOURCE = "build.properties";

    private BuildVersion() {
    }

    public static String get() {
        try (InputStream in = BuildVersion.class.getResourceAsStream(RESOURCE)) {
            Properties properties = new Properties();
            if (in != null) {
                properties.load(in);
            }
            String version = properties.getProperty("version", "");
            // Missing or unfiltered (classes built by an IDE, not Maven): "dev", never "${...}".
            return version.isBlank() || version.contains("${") ? UNBUILT : version;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
