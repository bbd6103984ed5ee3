package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceAccount;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.rbac.ClusterRole;
import io.fabric8.kubernetes.api.model.rbac.ClusterRoleBinding;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Every manifest {@code kubectl apply -k k8s/} applies parses into what it claims to be. */
class ManifestsTest {

    private static final String NAMESPACE = "driver-alias";

    /** Where these go depends on where Prometheus and Grafana look: their author decides. */
    private static final Set<String> OBSERVABILITY = Set.of(
            "070-prometheusrule.yaml", "080-grafana-dashboard-configmap.yaml");

    /** What each file must hold; the observability files (070, 080) included. */
    private static final Map<String, Class<? extends HasMetadata>> EXPECTED = Map.of(
            "000-namespace.yaml", Namespace.class,
            "010-serviceaccount.yaml", ServiceAccount.class,
            "020-clusterrole.yaml", ClusterRole.class,
            "030-clusterrolebinding.yaml", ClusterRoleBinding.class,
            "040-daemonset.yaml", DaemonSet.class,
            "050-service.yaml", Service.class,
            "060-servicemonitor.yaml", GenericKubernetesResource.class,
            "070-prometheusrule.yaml", GenericKubernetesResource.class,
            "080-grafana-dashboard-configmap.yaml", ConfigMap.class);

    static Stream<String> resources() throws Exception {
        return Manifests.resources().stream();
    }

    @Test
    void kustomizationListsEveryManifestInOrder() throws Exception {
        List<String> resources = Manifests.resources();

        assertThat(resources).containsExactlyInAnyOrderElementsOf(EXPECTED.keySet());
        assertThat(resources).isSorted();
    }

    @ParameterizedTest
    @MethodSource("resources")
    void eachManifestParsesIntoItsType(String file) throws Exception {
        assertThat(Files.isRegularFile(Manifests.directory().resolve(file))).as(file + " exists").isTrue();

        HasMetadata resource = Manifests.load(file);

        assertThat(resource).as(file).isInstanceOf(EXPECTED.get(file));
        assertThat(resource.getMetadata().getName()).as(file).isNotBlank();
        if (!(resource instanceof GenericKubernetesResource)) {
            assertThat(Manifests.unknownFields(resource)).as("fields fabric8 does not know in " + file).isEmpty();
        }
    }

    @ParameterizedTest
    @MethodSource("resources")
    void namespacedResourcesLiveInTheAgentsNamespace(String file) throws Exception {
        HasMetadata resource = Manifests.load(file);
        boolean clusterScoped = resource instanceof Namespace || resource instanceof ClusterRole
                || resource instanceof ClusterRoleBinding;

        if (clusterScoped) {
            assertThat(resource.getMetadata().getNamespace()).as(file).isNull();
        } else if (!OBSERVABILITY.contains(file)) {
            assertThat(resource.getMetadata().getNamespace()).as(file).isEqualTo(NAMESPACE);
        }
    }

    @Test
    void theServiceMonitorScrapesTheMetricsPortAsJobDriverAliasAgent() throws Exception {
        GenericKubernetesResource monitor = Manifests.load("060-servicemonitor.yaml", GenericKubernetesResource.class);
        Service service = Manifests.load("050-service.yaml", Service.class);

        assertThat(monitor.getApiVersion()).isEqualTo("monitoring.coreos.com/v1");
        assertThat(monitor.getKind()).isEqualTo("ServiceMonitor");
        String jobLabel = monitor.get("spec", "jobLabel");
        assertThat(service.getMetadata().getLabels()).containsEntry(jobLabel, "driver-alias-agent");
        Map<String, String> selector = monitor.get("spec", "selector", "matchLabels");
        assertThat(service.getMetadata().getLabels()).containsAllEntriesOf(selector);
        List<Map<String, Object>> endpoints = monitor.get("spec", "endpoints");
        assertThat(endpoints).singleElement().satisfies(e -> {
            assertThat(e).containsEntry("port", "metrics").containsEntry("path", "/metrics");
        });
    }

    @Test
    void theServiceExposesPort9470AsMetricsAndKeepsUnreadyAgentsScraped() throws Exception {
        Service service = Manifests.load("050-service.yaml", Service.class);
        DaemonSet daemonSet = Manifests.load("040-daemonset.yaml", DaemonSet.class);

        assertThat(service.getSpec().getPorts()).singleElement().satisfies(p -> {
            assertThat(p.getName()).isEqualTo("metrics");
            assertThat(p.getPort()).isEqualTo(9470);
            assertThat(p.getTargetPort().getStrVal()).isEqualTo("metrics");
        });
        assertThat(service.getSpec().getPublishNotReadyAddresses()).isTrue();
        assertThat(daemonSet.getSpec().getTemplate().getMetadata().getLabels())
                .containsAllEntriesOf(service.getSpec().getSelector());
    }

    @Test
    void theBindingGivesTheClusterRoleToTheAgentsServiceAccount() throws Exception {
        ClusterRoleBinding binding = Manifests.load("030-clusterrolebinding.yaml", ClusterRoleBinding.class);
        ClusterRole role = Manifests.load("020-clusterrole.yaml", ClusterRole.class);
        ServiceAccount account = Manifests.load("010-serviceaccount.yaml", ServiceAccount.class);
        DaemonSet daemonSet = Manifests.load("040-daemonset.yaml", DaemonSet.class);

        assertThat(binding.getRoleRef().getKind()).isEqualTo("ClusterRole");
        assertThat(binding.getRoleRef().getName()).isEqualTo(role.getMetadata().getName());
        assertThat(binding.getSubjects()).singleElement().satisfies(s -> {
            assertThat(s.getKind()).isEqualTo("ServiceAccount");
            assertThat(s.getName()).isEqualTo(account.getMetadata().getName());
            assertThat(s.getNamespace()).isEqualTo(account.getMetadata().getNamespace());
        });
        assertThat(daemonSet.getSpec().getTemplate().getSpec().getServiceAccountName())
                .isEqualTo(account.getMetadata().getName());
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
