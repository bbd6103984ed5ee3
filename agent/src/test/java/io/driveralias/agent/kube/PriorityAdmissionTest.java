package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.PodSpecBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceQuota;
import io.fabric8.kubernetes.api.model.ScopedResourceSelectorRequirement;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.FieldSource;

/**
 * The DaemonSet's pods get past the API server's quota admission on a cluster that keeps the
 * critical priority classes to namespaces with a quota for them (GKE's admission configuration:
 * {@code limitedResources} for pods, {@code PriorityClass In [system-node-critical,
 * system-cluster-critical]}), because every variant ships that quota in the pods' namespace. The
 * admission rule is modelled on the API server's (plugin/pkg/admission/resourcequota): a pod whose
 * priority class is limited needs, in its namespace, a quota that matches the pod and selects
 * that scope, or it is refused with "insufficient quota to match these scopes".
 */
class PriorityAdmissionTest {

    static final List<String> VARIANTS = Manifests.VARIANTS;
    static final List<String> INSTALLS = Manifests.INSTALLS;

    private static final String DOC = "docs/kubernetes.md";

    /** GKE's configuration of the ResourceQuota admission plugin. */
    private static final ScopedResourceSelectorRequirement GKE_LIMITED = new ScopedResourceSelectorRequirement(
            "In", "PriorityClass", List.of("system-node-critical", "system-cluster-critical"));

    /** Kubernetes' documented limit of nodes per cluster: one agent pod per node at most. */
    private static final int MAX_NODES = 5000;

    private static DaemonSet daemonSet(List<HasMetadata> rendered) {
        return Manifests.only(rendered, "DaemonSet", DaemonSet.class);
    }

    private static List<ResourceQuota> quotas(List<HasMetadata> rendered) {
        return rendered.stream().filter(ResourceQuota.class::isInstance).map(ResourceQuota.class::cast).toList();
    }

    @ParameterizedTest
    @FieldSource("INSTALLS")
    void thePodsAreAdmittedWithTheShippedQuota(String variant) {
        List<HasMetadata> rendered = Manifests.render(variant);
        DaemonSet daemonSet = daemonSet(rendered);
        PodSpec pod = daemonSet.getSpec().getTemplate().getSpec();

        assertThat(pod.getPriorityClassName()).isEqualTo("system-node-critical");
        assertThat(admit(pod, daemonSet.getMetadata().getNamespace(), quotas(rendered))).isEmpty();
        // ... and refused without it: the quota is what admits them.
        assertThat(admit(pod, daemonSet.getMetadata().getNamespace(), List.of()))
                .hasValue("insufficient quota to match these scopes: [PriorityClass]");
    }

    @ParameterizedTest
    @FieldSource("INSTALLS")
    void theQuotaAdmitsAndNeverLimits(String variant) {
        List<HasMetadata> rendered = Manifests.render(variant);
        ResourceQuota quota = Manifests.only(rendered, "ResourceQuota", ResourceQuota.class);

        assertThat(quota.getMetadata().getNamespace()).isEqualTo(daemonSet(rendered).getMetadata().getNamespace());
        assertThat(quota.getSpec().getScopes()).isNullOrEmpty();
        // Only pods are counted: a quota on cpu or memory would refuse pods without requests for them.
        assertThat(quota.getSpec().getHard()).containsOnlyKeys("pods");
        assertThat(Quantity.getAmountInBytes(quota.getSpec().getHard().get("pods")).intValueExact())
                .isGreaterThan(MAX_NODES * 10);
    }

    /**
     * docs/kubernetes.md's alternative: a priority class of one's own, admitted without a quota;
     * then the page's patch that deletes the quota too.
     */
    @ParameterizedTest
    @FieldSource("VARIANTS")
    void theDocumentedOverlayWithAPriorityClassOfOnesOwnNeedsNoQuota(String variant, @TempDir Path tmp)
            throws Exception {
        Path overlay = DocumentedOverlay.write(tmp, DOC, "own-priority", variant);
        List<HasMetadata> rendered = Manifests.render(overlay);
        DaemonSet daemonSet = daemonSet(rendered);
        PodSpec pod = daemonSet.getSpec().getTemplate().getSpec();

        assertThat(pod.getPriorityClassName()).isEqualTo("gpu-node-agents");
        assertThat(admit(pod, daemonSet.getMetadata().getNamespace(), List.of())).isEmpty();
        PodSpec original = daemonSet(Manifests.render(variant)).getSpec().getTemplate().getSpec();
        original.setPriorityClassName(pod.getPriorityClassName());
        assertThat(pod).isEqualTo(original);

        DocumentedOverlay.addPatch(overlay, DOC, "no-quota.yaml", variant);
        List<HasMetadata> withoutQuota = Manifests.render(overlay);
        assertThat(quotas(withoutQuota)).isEmpty();
        assertThat(withoutQuota).hasSize(rendered.size() - 1);
        assertThat(daemonSet(withoutQuota)).isEqualTo(daemonSet);
    }

    @Test
    void aQuotaInAnotherNamespaceAdmitsNothing() {
        List<HasMetadata> moved = Manifests.render("overlays/namespace");
        PodSpec pod = daemonSet(moved).getSpec().getTemplate().getSpec();

        assertThat(admit(pod, "gpu-system", quotas(Manifests.render("base")))).isPresent();
        assertThat(admit(pod, "gpu-system", quotas(moved))).isEmpty();
    }

    /** The model on cases the manifests do not exercise. */
    @Test
    void theModelFollowsTheApiServer() {
        PodSpec plain = new PodSpecBuilder().build();
        PodSpec clusterCritical = new PodSpecBuilder().withPriorityClassName("system-cluster-critical").build();
        List<HasMetadata> rendered = Manifests.render("base");

        assertThat(admit(plain, "driver-alias", List.of())).as("no priority class: not limited").isEmpty();
        assertThat(admit(clusterCritical, "driver-alias", quotas(rendered)))
                .as("the shipped quota admits only the class it names").isPresent();
    }

    /**
     * Empty when admitted, else the API server's reason. Scope coverage only: the shipped quota's
     * capacity is {@link #theQuotaAdmitsAndNeverLimits}'s business.
     */
    static Optional<String> admit(PodSpec pod, String namespace, List<ResourceQuota> quotas) {
        if (!matches(GKE_LIMITED, pod)) {
            return Optional.empty();
        }
        Set<String> covered = new LinkedHashSet<>();
        for (ResourceQuota quota : quotas) {
            if (!namespace.equals(quota.getMetadata().getNamespace())) {
                continue;
            }
            if (quota.getSpec().getScopes() != null && !quota.getSpec().getScopes().isEmpty()) {
                throw new UnsupportedOperationException("scopes are not modelled: " + quota.getSpec().getScopes());
            }
            List<ScopedResourceSelectorRequirement> selector = quota.getSpec().getScopeSelector() == null ? List.of()
                    : quota.getSpec().getScopeSelector().getMatchExpressions();
            if (selector.stream().allMatch(r -> matches(r, pod))) {
                selector.forEach(r -> covered.add(r.getScopeName()));
            }
        }
        if (!covered.contains(GKE_LIMITED.getScopeName())) {
            return Optional.of("insufficient quota to match these scopes: [" + GKE_LIMITED.getScopeName() + "]");
        }
        return Optional.empty();
    }

    private static boolean matches(ScopedResourceSelectorRequirement requirement, PodSpec pod) {
        if (!requirement.getScopeName().equals("PriorityClass")) {
            throw new UnsupportedOperationException("scope " + requirement.getScopeName() + " is not modelled");
        }
        String priorityClass = pod.getPriorityClassName();
        List<String> values = requirement.getValues() == null ? List.of() : requirement.getValues();
        return switch (requirement.getOperator()) {
            case "In" -> priorityClass != null && values.contains(priorityClass);
            case "NotIn" -> priorityClass == null || !values.contains(priorityClass);
            case "Exists" -> priorityClass != null && !priorityClass.isEmpty();
            case "DoesNotExist" -> priorityClass == null || priorityClass.isEmpty();
            default -> throw new IllegalArgumentException("operator " + requirement.getOperator());
        };
    }
}
