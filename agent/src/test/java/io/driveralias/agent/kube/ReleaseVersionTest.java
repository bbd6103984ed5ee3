package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.metrics.RepoFiles;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.PodTemplateSpec;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.FieldSource;

/**
 * Upgrades roll: the release's version (the parent pom's) is the image's tag, the manifests deploy
 * that tag through kustomize's {@code images:}, and a new version changes the DaemonSet's pod
 * template, which is what makes {@code kubectl apply -k} replace the pods.
 */
class ReleaseVersionTest {

    static final List<String> VARIANTS = Manifests.VARIANTS;
    static final List<String> INSTALLS = Manifests.INSTALLS;

    private static final String VERSION = RepoFiles.projectVersion();

    private static PodTemplateSpec template(List<HasMetadata> rendered) {
        return Manifests.only(rendered, "DaemonSet", DaemonSet.class).getSpec().getTemplate();
    }

    private static String image(List<HasMetadata> rendered) {
        return template(rendered).getSpec().getContainers().getFirst().getImage();
    }

    @Test
    void theVersionIsSemantic() {
        assertThat(VERSION).matches("(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)(-[0-9A-Za-z.-]+)?");
    }

    @ParameterizedTest
    @FieldSource("INSTALLS")
    void everyVariantRunsTheImageTaggedWithThisVersion(String variant) {
        assertThat(image(Manifests.render(variant))).isEqualTo("driver-alias-agent:" + VERSION);
    }

    /**
     * The chart is the release's: its version and appVersion are the pom's, so that a new release
     * is a new chart and its image (the appVersion, unless image.tag says otherwise) the new one.
     */
    @Test
    void theChartsVersionAndAppVersionAreThisRelease() {
        String chart = RepoFiles.read("charts/driver-alias-agent/Chart.yaml");

        assertThat(chart).containsPattern("(?m)^version: " + Pattern.quote(VERSION) + "$")
                .containsPattern("(?m)^appVersion: \"" + Pattern.quote(VERSION) + "\"$");
    }

    /** What the Dockerfile's build line and the README use to tag the image. */
    @Test
    void versionShPrintsThePomsVersion() throws Exception {
        Process p = new ProcessBuilder(RepoFiles.path("agent/image/version.sh").toString()).redirectErrorStream(true)
                .start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();

        assertThat(p.exitValue()).as(out).isZero();
        assertThat(out).isEqualTo(VERSION + "\n");
    }

    /**
     * The image the documented {@code docker} lines and the systemd unit run is this release's
     * (or says where the tag comes from), so that they move with it.
     */
    @Test
    void everyDocumentedDockerLineNamesThisRelease() throws Exception {
        Pattern line = Pattern.compile("docker (?:run|rmi|save)\\b[^\\n]*?\\bdriver-alias-agent:([0-9A-Za-z_.$()/-]+)");
        int found = 0;
        for (String file : List.of("README.md", "docs/install-without-kubernetes.md", "docs/runbook.md", "docs/image.md",
                "deploy/driver-alias-agent.service")) {
            Matcher m = line.matcher(RepoFiles.read(file));
            while (m.find()) {
                found++;
                String tag = m.group(1);
                assertThat(tag.equals(VERSION) || tag.startsWith("$")).as("%s: %s", file, m.group()).isTrue();
            }
        }
        assertThat(found).isGreaterThanOrEqualTo(5);
    }

    @Test
    void theChangelogHasThisVersion() {
        String changelog = RepoFiles.read("CHANGELOG.md");

        assertThat(changelog).contains("https://keepachangelog.com/en/1.1.0/", "https://semver.org/spec/v2.0.0.html");
        assertThat(changelog).containsPattern("(?m)^## \\[" + Pattern.quote(VERSION) + "] - \\d{4}-\\d{2}-\\d{2}$");
    }

    /**
     * The next version, set where a release sets it, changes the pod template's image and nothing
     * else in any variant: the DaemonSet controller replaces the pods, one node at a time.
     */
    @ParameterizedTest
    @FieldSource("VARIANTS")
    void aNewVersionChangesThePodTemplatesImageAndNothingElse(String variant, @TempDir Path tmp) throws Exception {
        Path k8s = DocumentedOverlay.copyOfK8s(tmp);
        Path kustomization = k8s.resolve("base/kustomization.yaml");
        String next = nextMinor(VERSION);
        String text = Files.readString(kustomization);
        assertThat(text).contains("newTag: \"" + VERSION + "\"");
        Files.writeString(kustomization, text.replace("newTag: \"" + VERSION + "\"", "newTag: \"" + next + "\""));

        PodTemplateSpec before = template(Manifests.render(variant));
        PodTemplateSpec after = template(Manifests.render(k8s.resolve(variant)));

        assertThat(after.getSpec().getContainers().getFirst().getImage()).isEqualTo("driver-alias-agent:" + next);
        assertThat(after).isNotEqualTo(before);
        after.getSpec().getContainers().getFirst().setImage(before.getSpec().getContainers().getFirst().getImage());
        assertThat(after).isEqualTo(before);
    }

    /**
     * The README's upgrade overlay (the image from your registry, at the version you name) on every
     * variant: it sets the image, and a new tag in it changes the pod template's image only.
     */
    @ParameterizedTest
    @FieldSource("VARIANTS")
    void theReadmesUpgradeOverlaySetsTheImageAndANewTagRollsIt(String variant, @TempDir Path tmp) throws Exception {
        Path overlay = DocumentedOverlay.write(tmp, "README.md", "upgrade", variant);
        String text = Files.readString(overlay.resolve("kustomization.yaml"));
        Matcher name = Pattern.compile("newName: (\\S+)").matcher(text);
        Matcher tag = Pattern.compile("newTag: \"([^\"]+)\"").matcher(text);
        assertThat(name.find() && tag.find()).as(text).isTrue();

        PodTemplateSpec before = template(Manifests.render(overlay));
        assertThat(before.getSpec().getContainers().getFirst().getImage()).isEqualTo(name.group(1) + ":" + tag.group(1));

        String next = nextMinor(tag.group(1));
        Files.writeString(overlay.resolve("kustomization.yaml"), text.replace(tag.group(), "newTag: \"" + next + "\""));
        PodTemplateSpec after = template(Manifests.render(overlay));

        assertThat(after.getSpec().getContainers().getFirst().getImage()).isEqualTo(name.group(1) + ":" + next);
        after.getSpec().getContainers().getFirst().setImage(before.getSpec().getContainers().getFirst().getImage());
        assertThat(after).isEqualTo(before);
    }

    private static String nextMinor(String version) {
        String[] parts = version.replaceFirst("-.*", "").split("\\.");
        return parts[0] + "." + (Integer.parseInt(parts[1]) + 1) + ".0";
    }
}
