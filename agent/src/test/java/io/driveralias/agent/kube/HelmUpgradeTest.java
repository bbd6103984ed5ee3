package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.metrics.RepoFiles;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.PodTemplateSpec;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.rbac.ClusterRoleBinding;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What {@code helm upgrade} changes on a cluster, rendered and diffed with the same values (the
 * kube-prometheus-stack variant's): from the previous release's install (the newest of
 * charts/upgrade/, committed when it was released; 0.2.0 had no chart, so its kustomize install,
 * which the first {@code helm upgrade --install} takes over), and from this chart to its next
 * version. The diff is printed, as an operator's {@code helm diff} would show it.
 */
class HelmUpgradeTest {

    private static final String INSTALL = Manifests.CHART + "overlays/kube-prometheus-stack";

    /** The newest snapshot in charts/upgrade/, by version. */
    private static Path previousRelease() throws IOException {
        try (Stream<Path> files = Files.list(RepoFiles.path("charts/upgrade"))) {
            return files.filter(f -> f.getFileName().toString().matches("\\d+\\.\\d+\\.\\d+\\.yaml"))
                    .max(Comparator.comparing(HelmUpgradeTest::version)).orElseThrow(
                            () -> new AssertionError("no release snapshot in charts/upgrade (charts/upgrade/snapshot.sh)"));
        }
    }

    private static String version(Path snapshot) {
        String[] parts = snapshot.getFileName().toString().replace(".yaml", "").split("\\.");
        return String.format("%06d.%06d.%06d", Integer.parseInt(parts[0]), Integer.parseInt(parts[1]),
                Integer.parseInt(parts[2]));
    }

    private static <T extends HasMetadata> T only(List<HasMetadata> rendered, String kind, Class<T> type) {
        return Manifests.only(rendered, kind, type);
    }

    /**
     * The upgrade from the previous release applies: it changes no field Kubernetes refuses to
     * change (Helm would stop halfway, "field is immutable"), deletes none of the objects the
     * previous release installed (Helm deletes what a chart no longer renders), and replaces the
     * pods one node at a time.
     */
    @Test
    void fromThePreviousReleaseNothingImmutableChangesNothingIsDeletedAndThePodsRollOneNodeAtATime()
            throws IOException {
        Path snapshot = previousRelease();
        List<HasMetadata> previous = Manifests.parse(Files.readString(snapshot));
        List<HasMetadata> current = HelmChart.render(INSTALL);
        List<ManifestDiff.Change> changes = ManifestDiff.changes(previous, current);
        List<String> shown = changes.stream().filter(c -> !HelmChart.HELM_LABELS.contains(
                c.path().replaceFirst("^metadata\\.labels\\.", ""))).map(Object::toString).toList();
        System.out.println("[helm upgrade] from " + snapshot.getFileName() + " to this checkout, Helm's labels aside ("
                + (changes.size() - shown.size()) + "):\n  " + String.join("\n  ", shown));

        assertThat(current.stream().map(ManifestDiff::identity))
                .containsAll(previous.stream().map(ManifestDiff::identity).toList());
        assertThat(only(current, "DaemonSet", DaemonSet.class).getSpec().getSelector())
                .isEqualTo(only(previous, "DaemonSet", DaemonSet.class).getSpec().getSelector());
        assertThat(only(current, "ClusterRoleBinding", ClusterRoleBinding.class).getRoleRef())
                .isEqualTo(only(previous, "ClusterRoleBinding", ClusterRoleBinding.class).getRoleRef());
        Service service = only(current, "Service", Service.class);
        assertThat(service.getSpec().getClusterIP()).isEqualTo(only(previous, "Service", Service.class).getSpec().getClusterIP());
        assertThat(only(current, "DaemonSet", DaemonSet.class).getSpec().getUpdateStrategy())
                .isEqualTo(only(previous, "DaemonSet", DaemonSet.class).getSpec().getUpdateStrategy());
    }

    /**
     * The next release of the chart (its version and appVersion raised, as a release raises them)
     * changes the pods' image and nothing else a pod sees: Helm's labels on the objects' metadata
     * change too, and restart nothing.
     */
    @Test
    void theNextReleaseChangesThePodsImageAndHelmsLabelsAlone(@TempDir Path tmp) throws IOException {
        String version = RepoFiles.projectVersion();
        String[] parts = version.replaceFirst("-.*", "").split("\\.");
        String next = parts[0] + "." + (Integer.parseInt(parts[1]) + 1) + ".0";
        Path chart = DocumentedOverlay.copy(HelmChart.directory(), tmp.resolve("driver-alias-agent"));
        Path chartYaml = chart.resolve("Chart.yaml");
        String text = Files.readString(chartYaml);
        assertThat(text).contains("\nversion: " + version + "\n", "\nappVersion: \"" + version + "\"\n");
        Files.writeString(chartYaml, text.replace("\nversion: " + version + "\n", "\nversion: " + next + "\n")
                .replace("\nappVersion: \"" + version + "\"\n", "\nappVersion: \"" + next + "\"\n"));

        List<HasMetadata> now = HelmChart.render(INSTALL);
        List<HasMetadata> upgraded = Manifests.parse(Helm.template(chart, HelmChart.RELEASE,
                Manifests.namespaceOf(INSTALL), HelmChart.values(INSTALL)));
        List<ManifestDiff.Change> changes = ManifestDiff.changes(now, upgraded);

        assertThat(changes).filteredOn(c -> !c.path().startsWith("metadata.labels."))
                .extracting(c -> c.object() + ": " + c.path() + ": " + c.after())
                .containsExactly("DaemonSet driver-alias/driver-alias-agent: spec.template.spec.containers[agent].image: "
                        + "driver-alias-agent:" + next);
        assertThat(changes).filteredOn(c -> c.path().startsWith("metadata.labels.")).extracting(ManifestDiff.Change::path)
                .containsOnly("metadata.labels.helm.sh/chart", "metadata.labels.app.kubernetes.io/version")
                .hasSize(2 * now.size());
    }

    /**
     * Values that do not concern the pods restart none: the ServiceMonitor's, the rules', the
     * dashboard's and the NetworkPolicy's, and the web configuration's contents, which the agent
     * reloads by itself (docs/monitoring.md). No checksum of them is put on the pod template.
     */
    @Test
    void valuesThePodsDoNotUseRestartNone(@TempDir Path tmp) {
        String web = "webConfig: {config: {basic_auth_users: {prometheus: \"$2y$10$%s\"}}}\n";
        PodTemplateSpec before = template(HelmChart.render(INSTALL,
                HelmChart.valuesFile(tmp.resolve("a"), "values", web.formatted("abcdefghijklmnopqrstuv"))));
        PodTemplateSpec after = template(HelmChart.render(INSTALL, HelmChart.valuesFile(tmp.resolve("b"), "values", """
                serviceMonitor: {labels: {release: other}, interval: 15s}
                prometheusRule: {labels: {release: other}}
                dashboard: {labels: {team: gpu}, annotations: {grafana_folder: GPU}}
                networkPolicy: {prometheusNamespace: observability}
                """ + web.formatted("vutsrqponmlkjihgfedcba"))));

        assertThat(after).isEqualTo(before);
    }

    private static PodTemplateSpec template(List<HasMetadata> rendered) {
        return only(rendered, "DaemonSet", DaemonSet.class).getSpec().getTemplate();
    }
}
