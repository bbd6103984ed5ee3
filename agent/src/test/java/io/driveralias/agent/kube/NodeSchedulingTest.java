package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.FieldSource;

/**
 * Where the DaemonSet of each rendered variant runs: on GPU nodes labelled by GPU Feature
 * Discovery or by Node Feature Discovery (either is enough), tainted for GPU pods or not, and
 * nowhere else. A cluster with neither label gets no agent: the README's one-line
 * {@code kubectl label node} gives a node the GFD label.
 */
class NodeSchedulingTest {

    static final List<String> VARIANTS = Manifests.VARIANTS;

    private static final String GFD = "nvidia.com/gpu.present";
    private static final String NFD = "feature.node.kubernetes.io/pci-10de.present";

    private static PodSpec pod(String variant) {
        return Manifests.only(Manifests.render(variant), "DaemonSet", DaemonSet.class).getSpec().getTemplate().getSpec();
    }

    private static Node node(Map<String, String> labels, String... noScheduleTaints) {
        NodeBuilder b = new NodeBuilder().withNewMetadata().withName("node-1").withLabels(labels)
                .addToLabels("kubernetes.io/os", "linux").addToLabels("kubernetes.io/hostname", "node-1")
                .endMetadata().withNewSpec().endSpec();
        for (String key : noScheduleTaints) {
            b.editSpec().addNewTaint().withKey(key).withEffect("NoSchedule").endTaint().endSpec();
        }
        return b.build();
    }

    @ParameterizedTest
    @FieldSource("VARIANTS")
    void runsOnANodeWithOnlyTheNodeFeatureDiscoveryLabel(String variant) {
        assertThat(SchedulingPredicates.schedulable(pod(variant), node(Map.of(NFD, "true")))).isTrue();
    }

    @ParameterizedTest
    @FieldSource("VARIANTS")
    void runsOnANodeWithOnlyTheGpuFeatureDiscoveryLabel(String variant) {
        assertThat(SchedulingPredicates.schedulable(pod(variant), node(Map.of(GFD, "true")))).isTrue();
    }

    @ParameterizedTest
    @FieldSource("VARIANTS")
    void runsOnGpuNodesTaintedForGpuPodsOrCriticalAddOns(String variant) {
        PodSpec pod = pod(variant);
        assertThat(SchedulingPredicates.schedulable(pod, node(Map.of(GFD, "true", NFD, "true"), "nvidia.com/gpu")))
                .isTrue();
        assertThat(SchedulingPredicates.schedulable(pod, node(Map.of(NFD, "true"), "CriticalAddonsOnly"))).isTrue();
    }

    @ParameterizedTest
    @FieldSource("VARIANTS")
    void runsNowhereElse(String variant) {
        PodSpec pod = pod(variant);
        assertThat(SchedulingPredicates.schedulable(pod, node(Map.of()))).as("no label").isFalse();
        assertThat(SchedulingPredicates.schedulable(pod, node(Map.of(GFD, "false", NFD, "false"))))
                .as("labelled false").isFalse();
        assertThat(SchedulingPredicates.schedulable(pod, node(Map.of("feature.node.kubernetes.io/pci-1002.present",
                "true")))).as("another vendor's PCI device").isFalse();
        assertThat(SchedulingPredicates.schedulable(pod, node(Map.of(GFD, "true"), "dedicated")))
                .as("a GPU node with a taint nobody told the agent about").isFalse();
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
