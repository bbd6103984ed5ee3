package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Taint;
import io.fabric8.kubernetes.api.model.TaintBuilder;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.FieldSource;

/**
 * Where the DaemonSet of each rendered install (kustomize's variants, the chart's twins) runs: on GPU nodes labelled by GPU Feature
 * Discovery, by Node Feature Discovery or by their cloud provider (any one is enough), whatever
 * they are tainted with, and nowhere else. A cluster with neither label gets no agent: the README's one-line
 * {@code kubectl label node} gives a node the GFD label.
 */
class NodeSchedulingTest {

    static final List<String> VARIANTS = Manifests.VARIANTS;
    static final List<String> INSTALLS = Manifests.INSTALLS;

    private static final String GFD = "nvidia.com/gpu.present";
    private static final String NFD = "feature.node.kubernetes.io/pci-10de.present";

    private static PodSpec pod(String variant) {
        return Manifests.only(Manifests.render(variant), "DaemonSet", DaemonSet.class).getSpec().getTemplate().getSpec();
    }

    private static Node node(Map<String, String> labels, String... noScheduleTaints) {
        return tainted(labels, java.util.Arrays.stream(noScheduleTaints).map(k -> taint(k, null, "NoSchedule"))
                .toArray(Taint[]::new));
    }

    private static Node tainted(Map<String, String> labels, Taint... taints) {
        return new NodeBuilder().withNewMetadata().withName("node-1").withLabels(labels)
                .addToLabels("kubernetes.io/os", "linux").addToLabels("kubernetes.io/hostname", "node-1")
                .endMetadata().withNewSpec().withTaints(taints).endSpec().build();
    }

    private static Taint taint(String key, String value, String effect) {
        return new TaintBuilder().withKey(key).withValue(value).withEffect(effect).build();
    }

    @ParameterizedTest
    @FieldSource("INSTALLS")
    void runsOnANodeWithOnlyTheNodeFeatureDiscoveryLabel(String variant) {
        assertThat(SchedulingPredicates.schedulable(pod(variant), node(Map.of(NFD, "true")))).isTrue();
    }

    @ParameterizedTest
    @FieldSource("INSTALLS")
    void runsOnANodeWithOnlyTheGpuFeatureDiscoveryLabel(String variant) {
        assertThat(SchedulingPredicates.schedulable(pod(variant), node(Map.of(GFD, "true")))).isTrue();
    }

    /** The cloud providers' own GPU node labels, each alone, as GKE, AKS and EKS set them (docs/kubernetes.md). */
    static final List<Map<String, String>> PROVIDER_LABELS = List.of(
            Map.of("cloud.google.com/gke-accelerator", "nvidia-tesla-t4"),
            Map.of("cloud.google.com/gke-accelerator", "nvidia-h100-80gb"),
            Map.of("kubernetes.azure.com/accelerator", "nvidia"),
            Map.of("karpenter.k8s.aws/instance-gpu-manufacturer", "nvidia"),
            Map.of("eks.amazonaws.com/instance-gpu-manufacturer", "nvidia"));

    @ParameterizedTest
    @FieldSource("INSTALLS")
    void runsOnANodeWithOnlyItsCloudProvidersGpuLabel(String variant) {
        PodSpec pod = pod(variant);
        for (Map<String, String> labels : PROVIDER_LABELS) {
            assertThat(SchedulingPredicates.schedulable(pod, tainted(labels, GPU_NODE_TAINTS.toArray(Taint[]::new))))
                    .as("%s", labels).isTrue();
        }
    }

    /**
     * The alert that catches GPU nodes without an agent knows every label the DaemonSet selects:
     * each nodeSelectorTerm's key appears in DriverAliasAgentMissing as kube-state-metrics names it.
     */
    @Test
    void theMissingAgentAlertKnowsEveryLabelTheDaemonSetSelects() {
        String alert = io.driveralias.agent.metrics.PromQueries.rules(io.driveralias.agent.metrics.RepoFiles.read(
                io.driveralias.agent.metrics.PromQueries.RULES)).stream()
                .filter(q -> q.origin().equals("alert DriverAliasAgentMissing")).findFirst().orElseThrow().expr();
        for (var term : pod("base").getAffinity().getNodeAffinity().getRequiredDuringSchedulingIgnoredDuringExecution()
                .getNodeSelectorTerms()) {
            for (var expression : term.getMatchExpressions()) {
                String metricLabel = "label_" + expression.getKey().replaceAll("[^A-Za-z0-9]", "_");
                assertThat(alert).as("DriverAliasAgentMissing selects %s", expression.getKey()).contains(metricLabel);
            }
        }
    }

    /**
     * The taints GPU nodes carry in the wild, each alone and all at once: the device plugin's
     * and GPU Operator's {@code nvidia.com/gpu}, AKS's GPU pools' {@code sku=gpu}, the usual
     * {@code dedicated=gpu}, NoExecute ones that would evict, and CriticalAddonsOnly.
     */
    static final List<Taint> GPU_NODE_TAINTS = List.of(
            taint("nvidia.com/gpu", "present", "NoSchedule"),
            taint("nvidia.com/gpu", null, "NoExecute"),
            taint("sku", "gpu", "NoSchedule"),
            taint("dedicated", "gpu", "NoSchedule"),
            taint("dedicated", "gpu", "NoExecute"),
            taint("example.com/maintenance", "true", "NoExecute"),
            taint("CriticalAddonsOnly", "true", "NoSchedule"));

    @ParameterizedTest
    @FieldSource("INSTALLS")
    void runsOnAGpuNodeWhateverItIsTaintedWith(String variant) {
        PodSpec pod = pod(variant);
        for (Taint taint : GPU_NODE_TAINTS) {
            assertThat(SchedulingPredicates.schedulable(pod, tainted(Map.of(GFD, "true"), taint))).as("%s", taint).isTrue();
        }
        assertThat(SchedulingPredicates.schedulable(pod, tainted(Map.of(NFD, "true"), GPU_NODE_TAINTS.toArray(Taint[]::new))))
                .as("all of them at once").isTrue();
    }

    @ParameterizedTest
    @FieldSource("INSTALLS")
    void runsNowhereElse(String variant) {
        PodSpec pod = pod(variant);
        assertThat(SchedulingPredicates.schedulable(pod, node(Map.of()))).as("no label").isFalse();
        assertThat(SchedulingPredicates.schedulable(pod, node(Map.of(GFD, "false", NFD, "false"))))
                .as("labelled false").isFalse();
        assertThat(SchedulingPredicates.schedulable(pod, node(Map.of("feature.node.kubernetes.io/pci-1002.present",
                "true")))).as("another vendor's PCI device").isFalse();
        assertThat(SchedulingPredicates.schedulable(pod, node(Map.of("eks.amazonaws.com/instance-gpu-manufacturer", "amd",
                "karpenter.k8s.aws/instance-gpu-manufacturer", "amd", "kubernetes.azure.com/accelerator", "amd"))))
                .as("another manufacturer's GPU").isFalse();
        assertThat(SchedulingPredicates.schedulable(pod, tainted(Map.of(), GPU_NODE_TAINTS.toArray(Taint[]::new))))
                .as("tolerating a node's taints does not select it").isFalse();
    }

    /**
     * docs/kubernetes.md's overlay that narrows the tolerations to a list of one's own, on top of
     * every variant as the page says: the GPU taint it lists is tolerated, a taint it does not
     * list keeps the agent off, and nothing else in the pod changes.
     */
    @ParameterizedTest
    @FieldSource("VARIANTS")
    void theDocumentedOverlayNarrowsTheTolerations(String variant, @TempDir Path tmp) throws Exception {
        Path overlay = DocumentedOverlay.write(tmp, "docs/kubernetes.md", "narrow-tolerations", variant);

        PodSpec narrowed = Manifests.only(Manifests.render(overlay), "DaemonSet", DaemonSet.class).getSpec()
                .getTemplate().getSpec();

        assertThat(narrowed.getTolerations()).isNotEmpty().noneMatch(t -> t.getKey() == null);
        assertThat(SchedulingPredicates.schedulable(narrowed, tainted(Map.of(GFD, "true"),
                taint("nvidia.com/gpu", "present", "NoSchedule")))).isTrue();
        assertThat(SchedulingPredicates.schedulable(narrowed, tainted(Map.of(GFD, "true"),
                taint("dedicated", "gpu", "NoSchedule")))).as("a taint the overlay does not list").isFalse();
        PodSpec original = pod(variant);
        original.setTolerations(narrowed.getTolerations());
        assertThat(narrowed).isEqualTo(original);
    }

    /** The evaluator itself, on the cases the manifests do not exercise. */
    @Test
    void thePredicatesFollowTheApiReference() {
        PodSpec selectorOnly = new io.fabric8.kubernetes.api.model.PodSpecBuilder()
                .withNodeSelector(Map.of(GFD, "true")).build();
        assertThat(SchedulingPredicates.schedulable(selectorOnly, node(Map.of(GFD, "true")))).isTrue();
        assertThat(SchedulingPredicates.schedulable(selectorOnly, node(Map.of(NFD, "true")))).isFalse();

        PodSpec anded = new io.fabric8.kubernetes.api.model.PodSpecBuilder().withNewAffinity().withNewNodeAffinity()
                .withNewRequiredDuringSchedulingIgnoredDuringExecution().addNewNodeSelectorTerm()
                .addNewMatchExpression().withKey(GFD).withOperator("Exists").endMatchExpression()
                .addNewMatchExpression().withKey(NFD).withOperator("DoesNotExist").endMatchExpression()
                .endNodeSelectorTerm().endRequiredDuringSchedulingIgnoredDuringExecution()
                .endNodeAffinity().endAffinity().build();
        assertThat(SchedulingPredicates.schedulable(anded, node(Map.of(GFD, "x")))).isTrue();
        assertThat(SchedulingPredicates.schedulable(anded, node(Map.of(GFD, "x", NFD, "true")))).isFalse();

        PodSpec tolerateAll = new io.fabric8.kubernetes.api.model.PodSpecBuilder()
                .addNewToleration().withOperator("Exists").endToleration().build();
        assertThat(SchedulingPredicates.schedulable(tolerateAll, node(Map.of(), "anything"))).isTrue();
    }
}
