package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.metrics.PromQueries;
import io.driveralias.agent.metrics.RepoFiles;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
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

/**
 * The chart renders k8s/'s objects, not a second copy of them: files/k8s holds k8s/'s files byte
 * for byte, every one of them is rendered, {@code helm lint --strict} accepts every documented set
 * of values, a packaged chart renders what the directory does, and the rules and the dashboard it
 * installs are exactly the repository's.
 */
class HelmChartTest {

    static final List<String> CHART_INSTALLS = Manifests.INSTALLS.stream().filter(i -> i.startsWith(Manifests.CHART))
            .toList();

    /** A template's load of one file: (list $ "base/040-daemonset.yaml"). */
    private static final Pattern LOADS = Pattern.compile("\\(list [.$] \"([^\"]+\\.yaml)\"\\)");

    private static List<Path> files(Path dir) throws IOException {
        try (Stream<Path> walk = Files.walk(dir)) {
            return walk.filter(Files::isRegularFile).sorted().toList();
        }
    }

    @Test
    void everyFileTheChartCarriesIsK8ssOwnByteForByte() throws IOException {
        Path copies = HelmChart.directory().resolve("files/k8s");
        List<Path> carried = files(copies);

        assertThat(carried).isNotEmpty();
        for (Path copy : carried) {
            Path original = Manifests.directory().resolve(copies.relativize(copy).toString());
            assertThat(original).as("%s has no original in k8s/", copy).isRegularFile();
            assertThat(copy).as("%s differs from %s: run k8s/alerts/sync-manifests.sh", copy, original)
                    .hasSameBinaryContentAs(original);
        }
    }

    /**
     * Every object of the kustomize base is carried, every carried file is one a template loads, and
     * every file a template loads is carried: a new object in k8s/base, or a template naming a file
     * that moved, fails here before it fails an install.
     */
    @Test
    void theTemplatesLoadEveryCarriedFileAndEveryObjectOfTheBase() throws IOException {
        Path copies = HelmChart.directory().resolve("files/k8s");
        Set<String> loaded = new HashSet<>();
        for (Path template : files(HelmChart.directory().resolve("templates"))) {
            Matcher m = LOADS.matcher(Files.readString(template));
            while (m.find()) {
                loaded.add(m.group(1));
            }
        }
        Set<String> carried = new HashSet<>();
        files(copies).forEach(f -> carried.add(copies.relativize(f).toString()));
        List<String> base = new ArrayList<>();
        Manifests.resources("base").forEach(r -> base.add("base/" + r));

        assertThat(loaded).containsExactlyInAnyOrderElementsOf(carried);
        assertThat(carried).containsAll(base);
    }

    @ParameterizedTest
    @FieldSource("CHART_INSTALLS")
    void helmLintAcceptsEveryDocumentedSetOfValuesStrictly(String install) {
        for (List<Path> values : List.of(HelmChart.values(install), withK3sRke2(install))) {
            List<String> args = new ArrayList<>(List.of("lint", "--strict", HelmChart.directory().toString(),
                    "--namespace", Manifests.namespaceOf(install)));
            values.forEach(v -> args.addAll(List.of("--values", v.toString())));
            Helm.Result lint = Helm.run(args);

            assertThat(lint.succeeded()).as("helm %s:\n%s%s", args, lint.out(), lint.err()).isTrue();
            assertThat(lint.out()).contains("1 chart(s) linted, 0 chart(s) failed").doesNotContain("[WARNING]");
        }
    }

    private static List<Path> withK3sRke2(String install) {
        List<Path> values = new ArrayList<>(HelmChart.values(install));
        values.add(HelmChart.directory().resolve("examples/k3s-rke2.yaml"));
        return values;
    }

    /** What `helm package` makes (for a registry of one's own) renders exactly what the checkout's directory does. */
    @Test
    void thePackagedChartRendersWhatTheDirectoryRenders(@TempDir Path tmp) {
        String install = Manifests.CHART + "overlays/kube-prometheus-stack";
        Helm.Result packaged = Helm.run(List.of("package", HelmChart.directory().toString(), "--destination", tmp.toString()));
        assertThat(packaged.succeeded()).as(packaged.err()).isTrue();
        Path archive = tmp.resolve("driver-alias-agent-" + RepoFiles.projectVersion() + ".tgz");

        assertThat(Helm.template(archive, HelmChart.RELEASE, Manifests.namespaceOf(install), HelmChart.values(install)))
                .isEqualTo(HelmChart.template(install));
    }

    /** The rules the chart installs are k8s/alerts' file's groups, exactly (PrometheusRuleManifestTest for kustomize). */
    @ParameterizedTest
    @FieldSource("CHART_INSTALLS")
    void thePrometheusRuleCarriesExactlyTheRuleFilesGroups(String install) throws IOException {
        List<HasMetadata> rules = Manifests.render(install).stream().filter(r -> r.getKind().equals("PrometheusRule"))
                .toList();
        if (Manifests.variantOf(install).equals("base")) {
            assertThat(rules).isEmpty();
            return;
        }
        Map<String, Object> file = Manifests.SERIALIZATION.unmarshal(RepoFiles.read(PromQueries.RULES),
                new tools.jackson.core.type.TypeReference<Map<String, Object>>() {
                });

        GenericKubernetesResource rule = (GenericKubernetesResource) rules.getFirst();
        assertThat(rules).hasSize(1);
        assertThat(rule.getApiVersion()).isEqualTo("monitoring.coreos.com/v1");
        Map<String, Object> spec = rule.get("spec");
        assertThat(spec).containsOnlyKeys("groups");
        assertThat(spec.get("groups")).isEqualTo(file.get("groups"));
    }

    /** The dashboard the chart installs is grafana/'s file, byte for byte (DashboardTest for kustomize). */
    @ParameterizedTest
    @FieldSource("CHART_INSTALLS")
    void theDashboardConfigMapHoldsExactlyTheDashboardFile(String install) {
        ConfigMap dashboard = Manifests.only(Manifests.render(install), "ConfigMap", ConfigMap.class);

        assertThat(dashboard.getMetadata().getNamespace()).isEqualTo(Manifests.namespaceOf(install));
        assertThat(dashboard.getMetadata().getLabels()).containsEntry("grafana_dashboard", "1");
        assertThat(dashboard.getData()).containsOnlyKeys("driver-alias-agent.json")
                .containsEntry("driver-alias-agent.json", RepoFiles.read(PromQueries.DASHBOARD));
    }
}
