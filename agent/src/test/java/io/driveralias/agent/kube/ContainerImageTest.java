package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The two ways to build the image (agent/Dockerfile, agent/image/build-rootfs.sh) start the agent
 * the same way, and the DaemonSet relies on that.
 */
class ContainerImageTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Path AGENT = Manifests.directory().resolveSibling("agent");

    private static List<String> dockerfile(String instruction) throws Exception {
        Matcher m = Pattern.compile("(?m)^" + instruction + " (\\[.*])$")
                .matcher(Files.readString(AGENT.resolve("Dockerfile")));
        assertThat(m.find()).as(instruction + " in agent/Dockerfile").isTrue();
        return JSON.readValue(m.group(1), new TypeReference<>() {
        });
    }

    /** An element of the Jib configuration that packs build-rootfs.sh's tree (agent/image/pom.xml). */
    private static String jib(String element) throws Exception {
        Matcher m = Pattern.compile("<" + element + ">([^<]*)</" + element + ">")
                .matcher(Files.readString(AGENT.resolve("image/pom.xml")));
        assertThat(m.find()).as("<%s> in agent/image/pom.xml", element).isTrue();
        return m.group(1).trim();
    }

    @Test
    void bothImagesStartTheJarTheSameWay() throws Exception {
        List<String> entrypoint = dockerfile("ENTRYPOINT");

        assertThat(List.of(jib("entrypoint").split(","))).isEqualTo(entrypoint);
        assertThat(List.of(jib("args"))).isEqualTo(dockerfile("CMD")).containsExactly("run");
        assertThat(jib("user")).isEqualTo("0:0");
        assertThat(entrypoint.getFirst()).isEqualTo("/opt/java/bin/java");
        assertThat(entrypoint.subList(entrypoint.size() - 2, entrypoint.size()))
                .containsExactly("-jar", "/opt/driver-alias-agent/driver-alias-agent.jar");
    }

    @Test
    void bothBuildTheTreeWithTheSameScript() throws Exception {
        String dockerfile = Files.readString(AGENT.resolve("Dockerfile"));
        assertThat(dockerfile).contains("RUN agent/image/build-rootfs.sh --jar agent/target/driver-alias-agent.jar"
                + " --rootfs /rootfs --no-import").contains("COPY --from=build /rootfs/ /");
        assertThat(Files.readString(AGENT.resolve("image/build-rootfs.sh")))
                .contains("\"$here/jlink-runtime.sh\" \"$rootfs/opt/java\"");
        assertThat(Files.isExecutable(AGENT.resolve("image/jlink-runtime.sh"))).isTrue();
        assertThat(Files.isExecutable(AGENT.resolve("image/build-rootfs.sh"))).isTrue();
    }

    /** Reproducible builds: every base image by an exact version tag or a digest, never a moving tag. */
    @Test
    void everyBaseImageIsPinned() throws Exception {
        Matcher from = Pattern.compile("(?m)^FROM (\\S+)").matcher(Files.readString(AGENT.resolve("Dockerfile")));
        int bases = 0;
        while (from.find()) {
            bases++;
            String image = from.group(1);
            assertThat(image.equals("scratch") || image.contains("@sha256:")
                    || image.matches("[^:@]+:\\d+\\.\\d+\\.\\d+[^:@]*")).as("FROM %s is pinned", image).isTrue();
        }
        assertThat(bases).isPositive();
    }

    @Test
    void carriesTheOciLabelsForSourceVersionAndLicense() throws Exception {
        String dockerfile = Files.readString(AGENT.resolve("Dockerfile"));
        assertThat(dockerfile).contains("org.opencontainers.image.source=", "org.opencontainers.image.version=\"${VERSION}\"",
                "org.opencontainers.image.licenses=\"Apache-2.0\"");
        assertThat(jib("org.opencontainers.image.version")).isEqualTo("${image.version}");
        assertThat(jib("org.opencontainers.image.licenses")).isEqualTo("Apache-2.0");
        assertThat(jib("org.opencontainers.image.source")).isEqualTo("https://github.com/driver-alias/driver-alias-agent");
        // Runtime-neutral words in both images' descriptions.
        assertThat(jib("org.opencontainers.image.description")).contains("GPU containers").doesNotContain("Docker containers");
        assertThat(dockerfile).contains("org.opencontainers.image.description=\"" + jib("org.opencontainers.image.description")
                + "\"");
    }

    /** The archive needs no Docker and no registry: Jib from scratch, and Docker only where asked to load into it. */
    @Test
    void theArchiveIsBuiltFromScratchWithoutDocker() throws Exception {
        assertThat(jib("image")).isEqualTo("scratch");
        assertThat(jib("format")).isEqualTo("OCI");
        String script = Files.readString(AGENT.resolve("image/build-rootfs.sh"));
        assertThat(script).contains("jib:buildTar").doesNotContain("docker import");
        assertThat(script.lines().filter(l -> l.trim().startsWith("docker ")).toList())
                .containsExactly("        docker load -i \"$archive\" ;;");
    }

    @Test
    void theDaemonSetKeepsTheImagesEntrypoint() throws Exception {
        Container agent = Manifests.only(Manifests.render("base"), "DaemonSet", DaemonSet.class)
                .getSpec().getTemplate().getSpec().getContainers().getFirst();

        assertThat(agent.getCommand()).isNullOrEmpty();
        assertThat(agent.getArgs()).isEqualTo(dockerfile("CMD"));
    }

    /** The JVM's options come from the argument file both images install beside the jar. */
    @Test
    void bothImagesReadTheJvmOptionsFromTheArgumentFile() throws Exception {
        List<String> entrypoint = dockerfile("ENTRYPOINT");

        assertThat(entrypoint).containsExactly("/opt/java/bin/java", "@" + JvmOptionsTest.IN_IMAGE, "-jar",
                "/opt/driver-alias-agent/driver-alias-agent.jar");
        assertThat(Files.readString(AGENT.resolve("image/build-rootfs.sh")))
                .contains("install -D -m 0644 \"$here/jvm.options\" \"$rootfs" + JvmOptionsTest.IN_IMAGE + "\"");
    }
}
