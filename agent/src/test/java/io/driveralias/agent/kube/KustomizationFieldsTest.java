package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.metrics.RepoFiles;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.FieldSource;
import org.snakeyaml.engine.v2.api.Load;
import org.snakeyaml.engine.v2.api.LoadSettings;

/**
 * The kustomizations render without a warning in every kubectl the machine has, and use no field
 * kustomize deprecated: what k8s/ ships, its component, and every overlay the documentation prints.
 */
class KustomizationFieldsTest {

    /** Deprecated in kustomize v5 (kubectl 1.27+ warns), or gone: their replacements are resources, patches, labels. */
    private static final Set<String> DEPRECATED = Set.of("bases", "patchesStrategicMerge", "patchesJson6902",
            "commonLabels", "vars", "imageTags");
    private static final Pattern DOC_BLOCK = Pattern.compile(
            "<!-- overlay ([\\w-]+): kustomization.yaml -->\\s*\\n```\\w*\\n(.*?)\\n```", Pattern.DOTALL);
    private static final List<String> DOCS = List.of("README.md", "docs/kubernetes.md");

    static final List<String> VARIANTS = Manifests.VARIANTS;

    /**
     * Every kubectl there is to render with: {@code $KUBECTL} or {@code kubectl}, and the
     * versioned ones beside it ({@code kubectl.1.27} ... as the Google Cloud SDK installs them).
     */
    static List<String> kubectls() throws IOException {
        Set<String> found = new LinkedHashSet<>();
        found.add(Kustomize.executable());
        for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
            Path kubectl = Path.of(dir.isEmpty() ? "." : dir, "kubectl");
            if (!Files.isExecutable(kubectl)) {
                continue;
            }
            Path real = kubectl.toRealPath();
            try (Stream<Path> siblings = Files.list(real.getParent())) {
                siblings.filter(p -> p.getFileName().toString().matches("kubectl\\.1\\.\\d+") && Files.isExecutable(p))
                        .sorted().forEach(p -> found.add(p.toString()));
            }
        }
        return List.copyOf(found);
    }

    @Test
    void noKustomizationInK8sUsesADeprecatedField() throws IOException {
        List<Path> files;
        try (Stream<Path> walk = Files.walk(Manifests.directory())) {
            files = walk.filter(p -> p.getFileName().toString().equals("kustomization.yaml")).toList();
        }
        assertThat(files).hasSizeGreaterThanOrEqualTo(7);
        for (Path file : files) {
            assertThat(keys(Files.readString(file))).as("%s", file).doesNotContainAnyElementsOf(DEPRECATED);
        }
    }

    @Test
    void noOverlayTheDocumentationPrintsUsesADeprecatedField() {
        int overlays = 0;
        for (String doc : DOCS) {
            Matcher block = DOC_BLOCK.matcher(RepoFiles.read(doc));
            while (block.find()) {
                overlays++;
                assertThat(keys(block.group(2))).as("%s, overlay %s", doc, block.group(1))
                        .doesNotContainAnyElementsOf(DEPRECATED);
            }
        }
        assertThat(overlays).isGreaterThanOrEqualTo(4);
    }

    /** Each variant, its namespace, and the k3s-RKE2 component on each variant: no warning, in any kubectl. */
    @Test
    void everyKubectlRendersEveryKustomizationWithoutAWarning(@TempDir Path tmp) throws IOException {
        List<Path> directories = new ArrayList<>();
        for (String variant : VARIANTS) {
            directories.add(Manifests.directory().resolve(variant));
            directories.add(Manifests.directory().resolve(Manifests.namespaceKustomization(variant)));
            directories.add(DocumentedOverlay.write(tmp.resolve("k3s-" + variant.replace('/', '-')), "docs/kubernetes.md",
                    "k3s-rke2", variant));
        }
        List<String> kubectls = kubectls();
        List<String> problems = new ArrayList<>();
        for (String kubectl : kubectls) {
            for (Path dir : new LinkedHashSet<>(directories)) {
                String warnings = Kustomize.run(kubectl, dir).warnings();
                if (!warnings.isBlank()) {
                    problems.add(kubectl + " kustomize " + dir + ":\n" + warnings);
                }
            }
        }
        System.out.println("[kustomize] rendered " + new LinkedHashSet<>(directories).size() + " kustomizations with "
                + kubectls);
        assertThat(problems).isEmpty();
    }

    /** docs/kubernetes.md's k3s and RKE2 overlay: the two containerd paths change, and nothing else. */
    @ParameterizedTest
    @FieldSource("VARIANTS")
    void theK3sAndRke2ComponentChangesOnlyTheContainerdPaths(String variant, @TempDir Path tmp) {
        Path overlay = DocumentedOverlay.write(tmp, "docs/kubernetes.md", "k3s-rke2", variant);
        List<HasMetadata> rendered = Manifests.render(overlay);
        List<HasMetadata> plain = Manifests.render(variant);
        DaemonSet daemonSet = Manifests.only(rendered, "DaemonSet", DaemonSet.class);

        List<EnvVar> env = daemonSet.getSpec().getTemplate().getSpec().getContainers().getFirst().getEnv();
        Map<String, String> values = new java.util.HashMap<>();
        env.stream().filter(e -> e.getValue() != null).forEach(e -> values.put(e.getName(), e.getValue()));
        assertThat(values).containsEntry("DRIVER_ALIAS_CONTAINERD_ADDRESS", "unix:///host/run/k3s/containerd/containerd.sock")
                .containsEntry("DRIVER_ALIAS_CONTAINERD_STATE", "/host/run/k3s/containerd");

        DaemonSet original = Manifests.only(plain, "DaemonSet", DaemonSet.class);
        List<EnvVar> originalEnv = original.getSpec().getTemplate().getSpec().getContainers().getFirst().getEnv();
        for (EnvVar e : originalEnv) {
            if (e.getName().startsWith("DRIVER_ALIAS_CONTAINERD_")) {
                e.setValue(values.get(e.getName()));
            }
        }
        // The same variables (kustomize puts the patched ones first), and nothing else changed.
        assertThat(env).containsExactlyInAnyOrderElementsOf(originalEnv);
        original.getSpec().getTemplate().getSpec().getContainers().getFirst().setEnv(env);
        assertThat(daemonSet).isEqualTo(original);
        assertThat(rendered).hasSameSizeAs(plain);
    }

    private static Set<String> keys(String yaml) {
        Object doc = new Load(LoadSettings.builder().build()).loadFromString(yaml);
        assertThat(doc).isInstanceOf(Map.class);
        Set<String> keys = new LinkedHashSet<>();
        ((Map<?, ?>) doc).keySet().forEach(k -> keys.add(String.valueOf(k)));
        return keys;
    }
}
