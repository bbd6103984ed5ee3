package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.metrics.RepoFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The agent's JVM options live in one argument file, {@value #IN_REPO}, which the images install as
 * {@value #IN_IMAGE}; every documented way of starting the agent reads it, and none sets them
 * through JAVA_TOOL_OPTIONS, which makes the JVM print a plain-text line before the JSON log.
 */
class JvmOptionsTest {

    static final String IN_REPO = "agent/image/jvm.options";
    static final String IN_IMAGE = "/opt/driver-alias-agent/jvm.options";

    /** Where the agent is started: the images, the install pages, the unit, the runbook. */
    private static List<Path> startingPlaces() throws IOException {
        List<Path> files = new ArrayList<>(List.of(RepoFiles.path("README.md"), RepoFiles.path("agent/Dockerfile"),
                RepoFiles.path("agent/image/build-rootfs.sh")));
        for (String dir : List.of("docs", "deploy")) {
            try (Stream<Path> list = Files.list(RepoFiles.path(dir))) {
                files.addAll(list.sorted().toList());
            }
        }
        return files;
    }

    @Test
    void theJvmTakesTheFileAsItIsAndSaysNothingAboutIt() throws Exception {
        Process java = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "@" + RepoFiles.path(IN_REPO), "-XX:+PrintCommandLineFlags", "-version").redirectErrorStream(true).start();
        java.getOutputStream().close();
        String output = new String(java.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(java.waitFor(60, TimeUnit.SECONDS)).isTrue();

        assertThat(java.exitValue()).as(output).isZero();
        assertThat(output).doesNotContain("Picked up", "WARNING", "Unrecognized", "ignoring option");
        // A 32 MiB heap, serial GC, a clean exit on OutOfMemoryError: what docs/footprint.md measured.
        assertThat(output).contains("-XX:MaxHeapSize=33554432 ", "-XX:InitialHeapSize=8388608 ", "-XX:+UseSerialGC ",
                "-XX:+ExitOnOutOfMemoryError ", "-XX:TieredStopAtLevel=1 ", "-XX:ActiveProcessorCount=2 ");
    }

    @Test
    void everyDocumentedJavaCommandLineReadsTheFile() throws Exception {
        Pattern javaLine = Pattern.compile("(?m)^.*\\bjava\\b.*-jar\\b.*driver-alias-agent\\.jar.*$");
        int found = 0;
        for (Path file : startingPlaces()) {
            Matcher m = javaLine.matcher(Files.readString(file));
            while (m.find()) {
                found++;
                String line = m.group();
                assertThat(line).as("%s: %s", file.getFileName(), line)
                        .containsPattern("@(" + Pattern.quote(IN_IMAGE) + "|" + Pattern.quote(IN_REPO) + ")[\"']?[ ,]");
                assertThat(line.indexOf("@")).as("%s: the file comes before -jar", line).isLessThan(line.indexOf("-jar"));
            }
        }
        // README (build and run, repair --root), the runbook's check lines, the host install page.
        assertThat(found).isGreaterThanOrEqualTo(4);
    }

    @Test
    void nothingSetsJvmOptionsThroughTheEnvironment() throws Exception {
        List<Path> files = new ArrayList<>(startingPlaces());
        try (Stream<Path> k8s = Files.walk(Manifests.directory())) {
            files.addAll(k8s.filter(f -> f.toString().endsWith(".yaml")).toList());
        }
        for (Path file : files) {
            assertThat(Files.readString(file)).as(file.toString())
                    .doesNotContainPattern("(JAVA_TOOL_OPTIONS|JDK_JAVA_OPTIONS|_JAVA_OPTIONS)=")
                    .doesNotContainPattern("name: (JAVA_TOOL_OPTIONS|JDK_JAVA_OPTIONS|_JAVA_OPTIONS)");
        }
    }
}
