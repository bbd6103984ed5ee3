package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.FieldSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Where the chart and a kustomization describe the same install, they render the same objects:
 * each variant of k8s/ and its chart twin; the k3s-RKE2 component and the chart's
 * examples/k3s-rke2.yaml; each overlay docs/kubernetes.md prints and the Helm values the same
 * page gives for it, on every variant. The same means every object, field for field, but for
 * Helm's own labels on the chart's metadata and the order of the agent's variables, which
 * kustomize changes when it patches one and which means nothing to the agent.
 */
class HelmKustomizeEquivalenceTest {

    static final List<String> VARIANTS = Manifests.VARIANTS;

    private static final String DOC = "docs/kubernetes.md";

    /** docs/kubernetes.md's overlays whose Helm values the page prints beside them. */
    private static final List<String> DOCUMENTED = List.of("cpu-request", "narrow-tolerations", "own-priority");

    static List<Arguments> documentedOnEveryVariant() {
        List<Arguments> all = new ArrayList<>();
        for (String variant : VARIANTS) {
            DOCUMENTED.forEach(name -> all.add(Arguments.of(variant, name)));
        }
        return all;
    }

    @ParameterizedTest
    @FieldSource("VARIANTS")
    void eachVariantsChartTwinRendersTheSameObjects(String variant) {
        assertSameInstall(HelmChart.render(Manifests.CHART + variant), Manifests.render(variant));
    }

    @ParameterizedTest
    @FieldSource("VARIANTS")
    void theK3sAndRke2ValuesRenderWhatTheComponentDoes(String variant, @TempDir Path tmp) {
        Path overlay = DocumentedOverlay.write(tmp, DOC, "k3s-rke2", variant);

        assertSameInstall(HelmChart.render(Manifests.CHART + variant,
                HelmChart.directory().resolve("examples/k3s-rke2.yaml")), Manifests.render(overlay));
    }

    /**
     * The page's values for an overlay, on top of a variant's, render what that overlay does on the
     * variant. A priority class of one's own needs no quota, and the chart renders none: the page's
     * own-priority overlay with its no-quota patch.
     */
    @ParameterizedTest
    @MethodSource("documentedOnEveryVariant")
    void eachDocumentedOverlaysValuesRenderWhatTheOverlayDoes(String variant, String name, @TempDir Path tmp) {
        Path overlay = DocumentedOverlay.write(tmp.resolve("kustomize"), DOC, name, variant);
        if (name.equals("own-priority")) {
            DocumentedOverlay.addPatch(overlay, DOC, "no-quota.yaml", variant);
        }
        Path values = HelmChart.valuesFile(tmp.resolve("helm"), name, DocumentedOverlay.values(DOC, name));

        assertSameInstall(HelmChart.render(Manifests.CHART + variant, values), Manifests.render(overlay));
    }

    private static void assertSameInstall(List<HasMetadata> chart, List<HasMetadata> kustomize) {
        Map<String, HasMetadata> fromChart = byIdentity(HelmChart.withoutHelmLabels(chart));
        Map<String, HasMetadata> fromKustomize = byIdentity(kustomize);

        assertThat(fromChart.keySet()).containsExactlyElementsOf(fromKustomize.keySet());
        fromChart.forEach((identity, object) -> assertThat(object).as(identity).isEqualTo(fromKustomize.get(identity)));
    }

    /** Kind, namespace and name of each object, its variables in name order. */
    private static Map<String, HasMetadata> byIdentity(List<HasMetadata> rendered) {
        Map<String, HasMetadata> objects = new TreeMap<>();
        for (HasMetadata object : rendered) {
            if (object instanceof DaemonSet daemonSet) {
                for (Container container : daemonSet.getSpec().getTemplate().getSpec().getContainers()) {
                    container.getEnv().sort(Comparator.comparing(EnvVar::getName));
                }
            }
            objects.put(object.getKind() + " " + object.getMetadata().getNamespace() + "/" + object.getMetadata().getName(),
                    object);
        }
        return objects;
    }
}
