package io.driveralias.agent.kube;

import io.fabric8.kubernetes.api.model.HasMetadata;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The Helm chart, {@code charts/driver-alias-agent}, rendered by the real helm as the README
 * installs it: release {@code driver-alias-agent}, into the namespace of the install, with the
 * documented values. Each kustomize variant of {@code k8s/} has a chart twin, named
 * {@code chart/<variant>} ({@link Manifests#CHART}), that describes the same install.
 */
final class HelmChart {

    static final String RELEASE = "driver-alias-agent";

    /** The labels Helm's tools look for, which the chart adds to every object's metadata and kustomize does not. */
    static final Set<String> HELM_LABELS = Set.of(
            "helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "app.kubernetes.io/version");

    /** The values each chart twin is installed with (README, docs/kubernetes.md#helm), by its kustomize variant. */
    private static final Map<String, List<String>> DOCUMENTED_VALUES = Map.of(
            "base", List.of(),
            "overlays/prometheus-operator", List.of("examples/prometheus-operator.yaml"),
            "overlays/kube-prometheus-stack", List.of("examples/kube-prometheus-stack.yaml"),
            "overlays/namespace", List.of("examples/prometheus-operator.yaml"));

    private HelmChart() {
    }

    /** {@code charts/driver-alias-agent} at the repository root. */
    static Path directory() {
        return Manifests.directory().getParent().resolve("charts/driver-alias-agent");
    }

    /** The kustomize variant a chart twin describes the same install as. */
    static String kustomizeTwin(String install) {
        if (!install.startsWith(Manifests.CHART)) {
            throw new IllegalArgumentException(install + " is not a chart install");
        }
        return install.substring(Manifests.CHART.length());
    }

    /** The documented values files of an install ({@code chart/<variant>}). */
    static List<Path> values(String install) {
        List<String> files = DOCUMENTED_VALUES.get(kustomizeTwin(install));
        if (files == null) {
            throw new IllegalArgumentException("no documented values for " + install);
        }
        return files.stream().map(directory()::resolve).toList();
    }

    /** {@code helm template} of an install, with more values files after its own. */
    static String template(String install, Path... more) {
        List<Path> values = new ArrayList<>(values(install));
        values.addAll(List.of(more));
        return Helm.template(directory(), RELEASE, Manifests.namespaceOf(install), values);
    }

    /** An install as {@code helm install} would send it, typed by fabric8. */
    static List<HasMetadata> render(String install, Path... more) {
        return Manifests.parse(template(install, more));
    }

    /** {@code yaml} as a values file in {@code dir}, for {@code --values}. */
    static Path valuesFile(Path dir, String name, String yaml) {
        try {
            Files.createDirectories(dir);
            return Files.writeString(dir.resolve(name + ".yaml"), yaml);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The objects with Helm's own labels taken off their metadata: what kustomize renders for the same install. */
    static List<HasMetadata> withoutHelmLabels(List<HasMetadata> rendered) {
        for (HasMetadata resource : rendered) {
            Map<String, String> labels = resource.getMetadata().getLabels();
            if (labels != null) {
                labels.keySet().removeAll(HELM_LABELS);
            }
        }
        return rendered;
    }
}
