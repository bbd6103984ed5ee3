package io.driveralias.agent.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * The agent's container image, made the registry-less way operators make it
 * ({@code agent/image/build-rootfs.sh}: jlinked runtime, the jar and glibc, FROM nothing, packed
 * by Jib into an OCI archive) from the packaged jar, and loaded into the test engine with
 * {@code docker load}. Built once per JVM; the tree stays in
 * {@code agent/target/it-image-rootfs} for inspection.
 */
public final class AgentImage {

    public static final String TAG = "daa-test/driver-alias-agent:it";

    private static String built;

    private AgentImage() {
    }

    public static synchronized String get(DockerHarness docker) {
        if (built == null) {
            built = build(docker);
        }
        return built;
    }

    private static String build(DockerHarness docker) {
        Path jar = AgentProcess.jar().toAbsolutePath();
        Path agentDir = jar.getParent().getParent();
        Path script = agentDir.resolve("image/build-rootfs.sh");
        Path rootfs = jar.getParent().resolve("it-image-rootfs");
        try {
            Path log = Files.createTempFile("daa-agent-image-", ".log");
            log.toFile().deleteOnExit();
            ProcessBuilder pb = new ProcessBuilder(script.toString(), "--jar", jar.toString(), "--rootfs",
                    rootfs.toString(), "--tag", TAG, "--archive", jar.getParent().resolve("it-image.oci.tar").toString(),
                    "--load", "docker").redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.to(log.toFile()));
            // The script's `docker load` of its OCI archive goes to the test engine (Docker 20.10, which
            // reads the archive's Docker manifest); jlink comes from this JDK.
            pb.environment().put("DOCKER_HOST", docker.host());
            Path javaHome = Path.of(System.getProperty("java.home"));
            if (Files.isExecutable(javaHome.resolve("bin/jlink"))) {
                pb.environment().put("JAVA_HOME", javaHome.toString());
            }
            Process p = pb.start();
            p.getOutputStream().close();
            if (!p.waitFor(300, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError(script + " did not finish within 300 s:\n" + Files.readString(log));
            }
            String output = Files.readString(log, StandardCharsets.UTF_8);
            if (p.exitValue() != 0) {
                throw new AssertionError(script + " exited " + p.exitValue() + ":\n" + output);
            }
            // The image must be there, with the script's entrypoint.
            Processes.check(docker.docker("image", "inspect", "--format", "{{json .Config.Entrypoint}}", TAG));
            return TAG;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
