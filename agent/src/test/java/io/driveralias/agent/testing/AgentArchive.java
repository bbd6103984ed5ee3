package io.driveralias.agent.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The agent's image as operators make it without Docker: {@code agent/image/build-rootfs.sh} with
 * its defaults (the tree from the packaged jar, packed by Jib into
 * {@code target/driver-alias-agent-VERSION.oci.tar}, named {@code driver-alias-agent:VERSION}).
 * Built once per JVM.
 */
public final class AgentArchive {

    private static Path built;

    private AgentArchive() {
    }

    /** The image's name in the archive, as the release's manifests deploy it. */
    public static String name() {
        return "driver-alias-agent:" + version();
    }

    /** The release's version, as agent/image/version.sh reads it: the root pom's own {@code <version>}. */
    public static String version() {
        Path pom = AgentProcess.jar().toAbsolutePath().getParent().getParent().getParent().resolve("pom.xml");
        try {
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^  <version>([^<]+)</version>\\s*$")
                    .matcher(Files.readString(pom));
            if (!m.find()) {
                throw new AssertionError("no <version> in " + pom);
            }
            return m.group(1);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static synchronized Path get() {
        if (built == null) {
            built = build();
        }
        return built;
    }

    private static Path build() {
        Path jar = AgentProcess.jar().toAbsolutePath();
        Path script = jar.getParent().getParent().resolve("image/build-rootfs.sh");
        Path archive = jar.getParent().resolve("driver-alias-agent-" + version() + ".oci.tar");
        try {
            Files.deleteIfExists(archive);
            Path log = Files.createTempFile("daa-agent-archive-", ".log");
            log.toFile().deleteOnExit();
            ProcessBuilder pb = new ProcessBuilder(List.of(script.toString(), "--jar", jar.toString(), "--rootfs",
                    jar.getParent().resolve("archive-rootfs").toString())).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.to(log.toFile()));
            pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
            Process p = pb.start();
            p.getOutputStream().close();
            if (!p.waitFor(600, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError(script + " did not finish within 600 s:\n" + Files.readString(log));
            }
            String output = Files.readString(log, StandardCharsets.UTF_8);
            if (p.exitValue() != 0 || !Files.isRegularFile(archive)) {
                throw new AssertionError(script + " exited " + p.exitValue() + " without " + archive + ":\n" + output);
            }
            return archive;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
