package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.ResourceQuota;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceAccount;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPeer;
import io.fabric8.kubernetes.api.model.rbac.ClusterRole;
import io.fabric8.kubernetes.api.model.rbac.ClusterRoleBinding;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.FieldSource;

/**
 * Every variant {@code kubectl apply -k k8s/<variant>} applies, rendered by the real
 * {@code kubectl kustomize}, and its twin from the Helm chart, rendered by the real
 * {@code helm template}, parses into what it claims to be and hangs together: names,
 * namespaces, selectors and the scrape settings the alerts rely on.
 */
class ManifestsTest {

    static final List<String> INSTALLS = Manifests.INSTALLS;

    /** What each kind must parse into; a kind not listed here is not expected in any variant. */
    private static final Map<String, Class<? extends HasMetadata>> TYPES = Map.of(
            "ResourceQuota", ResourceQuota.class,
            "ServiceAccount", ServiceAccount.class,
            "ClusterRole", ClusterRole.class,
            "ClusterRoleBinding", ClusterRoleBinding.class,
            "DaemonSet", DaemonSet.class,
            "Service", Service.class,
            "ConfigMap", ConfigMap.class,
            "NetworkPolicy", NetworkPolicy.class,
            "ServiceMonitor", GenericKubernetesResource.class,
            "PrometheusRule", GenericKubernetesResource.class);

    private static final Set<String> BASE = Set.of(
            "ResourceQuota", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "DaemonSet", "Service", "ConfigMap");
    private static final Set<String> OPERATOR = Set.of("ServiceMonitor", "PrometheusRule");

    private static Set<String> kinds(List<HasMetadata> rendered) {
        return rendered.stream().map(HasMetadata::getKind).collect(Collectors.toSet());
    }

    @Test
    void theBaseListsEveryFileInItsDirectoryInOrder() throws Exception {
        List<String> resources = Manifests.resources("base");
        try (var files = Files.list(Manifests.directory().resolve("base"))) {
            assertThat(resources).containsExactlyInAnyOrderElementsOf(files.map(f -> f.getFileName().toString())
                    .filter(f -> !f.equals("kustomization.yaml")).toList());
        }
        assertThat(resources).isSorted();
    }

    /** What each variant adds to the base, in kustomize and in the chart alike. */
    private static final Map<String, Set<String>> KINDS = Map.of(
            "base", BASE,
            "overlays/prometheus-operator", union(BASE, OPERATOR),
            "overlays/kube-prometheus-stack", union(BASE, OPERATOR, Set.of("NetworkPolicy")),
            "overlays/namespace", union(BASE, OPERATOR));

    @ParameterizedTest
    @FieldSource("INSTALLS")
    void eachVariantHoldsWhatItsNameSays(String install) {
        assertThat(kinds(Manifests.render(install))).containsExactlyInAnyOrderElementsOf(
                KINDS.get(Manifests.variantOf(install)));
    }

    @SafeVarargs
    private static Set<String> union(Set<String>... sets) {
        return java.util.Arrays.stream(sets).flatMap(Set::stream).collect(Collectors.toSet());
    }

    @ParameterizedTest
    @FieldSource("INSTALLS")
    void everyRenderedObjectParsesIntoItsTypeWithNoUnknownField(String variant) {
        List<HasMetadata> rendered = Manifests.render(variant);

        assertThat(rendered).isNotEmpty();
        for (HasMetadata resource : rendered) {
            String what = variant + ": " + resource.getKind() + " " + resource.getMetadata().getName();
            assertThat(TYPES).as(what).containsKey(resource.getKind());
            assertThat(resource).as(what).isInstanceOf(TYPES.get(resource.getKind()));
            assertThat(resource.getMetadata().getName()).as(what).isNotBlank();
            if (!(resource instanceof GenericKubernetesResource)) {
                assertThat(Manifests.unknownFields(resource)).as("fields fabric8 does not know in " + what).isEmpty();
            }
        }
        assertThat(rendered.stream().map(r -> r.getKind() + "/" + r.getMetadata().getName()))
                .doesNotHaveDuplicates();
    }

    @ParameterizedTest
    @FieldSource("INSTALLS")
    void everyNamespacedObjectAndTheServiceAccountSubjectLiveInTheVariantsNamespace(String variant) {
        List<HasMetadata> rendered = Manifests.render(variant);
        String namespace = Manifests.namespaceOf(variant);

        for (HasMetadata resource : rendered) {
            boolean clusterScoped = Set.of("ClusterRole", "ClusterRoleBinding").contains(resource.getKind());
            assertThat(resource.getMetadata().getNamespace()).as(variant + ": " + resource.getKind())
                    .isEqualTo(clusterScoped ? null : namespace);
        }
        ClusterRoleBinding binding = Manifests.only(rendered, "ClusterRoleBinding", ClusterRoleBinding.class);
        ClusterRole role = Manifests.only(rendered, "ClusterRole", ClusterRole.class);
        ServiceAccount account = Manifests.only(rendered, "ServiceAccount", ServiceAccount.class);
        DaemonSet daemonSet = Manifests.only(rendered, "DaemonSet", DaemonSet.class);
        assertThat(binding.getRoleRef().getKind()).isEqualTo("ClusterRole");
        assertThat(binding.getRoleRef().getName()).isEqualTo(role.getMetadata().getName());
        assertThat(binding.getSubjects()).singleElement().satisfies(s -> {
            assertThat(s.getKind()).isEqualTo("ServiceAccount");
            assertThat(s.getName()).isEqualTo(account.getMetadata().getName());
            assertThat(s.getNamespace()).isEqualTo(namespace);
        });
        assertThat(daemonSet.getSpec().getTemplate().getSpec().getServiceAccountName())
                .isEqualTo(account.getMetadata().getName());
    }

    /**
     * {@code kubectl delete -k k8s/<variant>} and {@code helm uninstall} delete what the install
     * renders: none renders a Namespace, so none can delete one it did not create (and everything
     * else living there).
     */
    @ParameterizedTest
    @FieldSource("INSTALLS")
    void noVariantCreatesOrDeletesANamespace(String variant) {
        assertThat(kinds(Manifests.render(variant))).doesNotContain("Namespace");
    }

    /**
     * Each variant's namespace has a kustomization of its own, applied first and deleted only when
     * asked: one Namespace, the variant's, labelled so that Pod Security Admission lets the
     * DaemonSet's pods in.
     */
    @ParameterizedTest
    @FieldSource("INSTALLS")
    void eachVariantsNamespaceIsItsOwnKustomization(String variant) {
        List<HasMetadata> rendered = Manifests.render(Manifests.namespaceKustomization(variant));

        assertThat(rendered).singleElement().isInstanceOf(Namespace.class);
        Namespace namespace = (Namespace) rendered.getFirst();
        assertThat(namespace.getMetadata().getName()).isEqualTo(Manifests.namespaceOf(variant));
        assertThat(namespace.getMetadata().getLabels())
                .containsEntry("pod-security.kubernetes.io/enforce", "privileged")
                .containsEntry("pod-security.kubernetes.io/warn", "privileged")
                .containsEntry("pod-security.kubernetes.io/audit", "privileged");
        assertThat(Manifests.unknownFields(namespace)).isEmpty();
    }

    @ParameterizedTest
    @FieldSource("INSTALLS")
    void theServiceExposesPort9470AsMetricsAndKeepsUnreadyAgentsScraped(String variant) {
        List<HasMetadata> rendered = Manifests.render(variant);
        Service service = Manifests.only(rendered, "Service", Service.class);
        DaemonSet daemonSet = Manifests.only(rendered, "DaemonSet", DaemonSet.class);

        assertThat(service.getSpec().getPorts()).singleElement().satisfies(p -> {
            assertThat(p.getName()).isEqualTo("metrics");
            assertThat(p.getPort()).isEqualTo(9470);
            assertThat(p.getTargetPort().getStrVal()).isEqualTo("metrics");
        });
        assertThat(service.getSpec().getPublishNotReadyAddresses()).isTrue();
        assertThat(daemonSet.getSpec().getTemplate().getMetadata().getLabels())
                .containsAllEntriesOf(service.getSpec().getSelector());
    }

    /**
     * The attribution the alerts depend on: honorLabels (the broken container's namespace, pod
     * and container win over the agent pod's), job from the Service's name label, the node
     * relabeled in, and no namespaceSelector that would miss an agent moved by an overlay.
     */
    @ParameterizedTest
    @FieldSource("INSTALLS")
    void theServiceMonitorHonorsTheAgentsLabelsAndFollowsItsNamespace(String variant) {
        List<HasMetadata> rendered = Manifests.render(variant);
        if (!kinds(rendered).contains("ServiceMonitor")) {
            assertThat(Manifests.variantOf(variant)).isEqualTo("base");
            return;
        }
        GenericKubernetesResource monitor = Manifests.only(rendered, "ServiceMonitor", GenericKubernetesResource.class);
        Service service = Manifests.only(rendered, "Service", Service.class);

        assertThat(monitor.getApiVersion()).isEqualTo("monitoring.coreos.com/v1");
        assertThat(monitor.getMetadata().getNamespace()).isEqualTo(service.getMetadata().getNamespace());
        Map<String, Object> spec = monitor.get("spec");
        assertThat(spec).doesNotContainKey("namespaceSelector");
        assertThat(service.getMetadata().getLabels()).containsEntry((String) spec.get("jobLabel"), "driver-alias-agent");
        Map<String, String> selector = monitor.get("spec", "selector", "matchLabels");
        assertThat(service.getMetadata().getLabels()).containsAllEntriesOf(selector);
        List<Map<String, Object>> endpoints = monitor.get("spec", "endpoints");
        assertThat(endpoints).singleElement().satisfies(e -> {
            assertThat(e).containsEntry("port", "metrics").containsEntry("path", "/metrics")
                    .containsEntry("honorLabels", true);
            assertThat(e.get("relabelings")).asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.LIST)
                    .contains(Map.of("sourceLabels", List.of("__meta_kubernetes_pod_node_name"),
                            "targetLabel", "node", "action", "replace"));
        });
    }

    static final List<String> KUBE_PROMETHEUS_STACK = List.of(
            "overlays/kube-prometheus-stack", Manifests.CHART + "overlays/kube-prometheus-stack");

    @ParameterizedTest
    @FieldSource("KUBE_PROMETHEUS_STACK")
    void kubePrometheusStackSelectsTheMonitorAndTheRulesByRelease(String install) {
        List<HasMetadata> rendered = Manifests.render(install);

        for (String kind : OPERATOR) {
            assertThat(Manifests.only(rendered, kind, GenericKubernetesResource.class).getMetadata().getLabels())
                    .as(kind).containsEntry("release", "kube-prometheus-stack")
                    .containsEntry("app.kubernetes.io/name", "driver-alias-agent");
        }
        // The patch changed labels only: the rules are still the generated ones.
        assertThat((Object) Manifests.only(rendered, "PrometheusRule", GenericKubernetesResource.class).get("spec"))
                .isEqualTo(Manifests.only(Manifests.render("overlays/prometheus-operator"), "PrometheusRule",
                        GenericKubernetesResource.class).get("spec"));
    }

    /** Ingress to the agent from Prometheus' namespace, on the metrics port, and from nothing else. */
    @ParameterizedTest
    @FieldSource("KUBE_PROMETHEUS_STACK")
    void theNetworkPolicyAdmitsOnlyTheScrapeOnTheMetricsPort(String install) {
        List<HasMetadata> rendered = Manifests.render(install);
        NetworkPolicy policy = Manifests.only(rendered, "NetworkPolicy", NetworkPolicy.class);
        DaemonSet daemonSet = Manifests.only(rendered, "DaemonSet", DaemonSet.class);

        assertThat(daemonSet.getSpec().getTemplate().getMetadata().getLabels())
                .containsAllEntriesOf(policy.getSpec().getPodSelector().getMatchLabels());
        assertThat(policy.getSpec().getPolicyTypes()).containsExactly("Ingress");
        assertThat(policy.getSpec().getIngress()).singleElement().satisfies(rule -> {
            assertThat(rule.getFrom()).singleElement().satisfies((NetworkPolicyPeer peer) -> {
                assertThat(peer.getIpBlock()).isNull();
                assertThat(peer.getPodSelector()).isNull();
                assertThat(peer.getNamespaceSelector().getMatchLabels())
                        .containsExactly(Map.entry("kubernetes.io/metadata.name", "monitoring"));
            });
            assertThat(rule.getPorts()).singleElement().satisfies(port -> {
                assertThat(port.getPort().getStrVal()).isEqualTo("metrics");
                assertThat(port.getProtocol()).isEqualTo("TCP");
            });
        });
        assertThat(daemonSet.getSpec().getTemplate().getSpec().getContainers().getFirst().getPorts())
                .anySatisfy(p -> assertThat(p.getName()).isEqualTo("metrics"));
    }

    @Test
    void aMisspeltOrMisplacedFieldIsCaught() {
        DaemonSet typo = Manifests.SERIALIZATION.unmarshal("""
                apiVersion: apps/v1
                kind: DaemonSet
                metadata: {name: x}
                spec:
                  template:
                    spec:
                      tolerationz: []
                      containers:
                        - name: a
                          securityContext: {capabilities: {add: [CHOWN]}, readOnlyRootFileSystem: true}
                """, DaemonSet.class);

        assertThat(Manifests.unknownFields(typo)).containsExactlyInAnyOrder(
                "spec.template.spec.tolerationz",
                "spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem");
    }
}
