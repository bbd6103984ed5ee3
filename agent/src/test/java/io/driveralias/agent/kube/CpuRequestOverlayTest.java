package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.FieldSource;

/**
 * The agent's CPU request is its weight when the node's CPUs are all busy, and as containerd's NRI
 * plugin it sits inside every pod's start: docs/benchmark.md measured the request below which a
 * node whose pods use every core starts GPU containers without their aliases and holds every pod's
 * start. The shipped request stays at or above it, and docs/kubernetes.md's overlay that changes it
 * changes nothing else.
 */
class CpuRequestOverlayTest {

    static final List<String> VARIANTS = Manifests.VARIANTS;
    static final List<String> INSTALLS = Manifests.INSTALLS;

    /** The least request measured to keep every GPU container's aliases at its first instruction on a saturated node. */
    private static final Quantity MEASURED_NEED = new Quantity("500m");

    private static Container agent(List<io.fabric8.kubernetes.api.model.HasMetadata> rendered) {
        DaemonSet daemonSet = Manifests.only(rendered, "DaemonSet", DaemonSet.class);
        return daemonSet.getSpec().getTemplate().getSpec().getContainers().stream()
                .filter(c -> c.getName().equals("agent")).findFirst().orElseThrow();
    }

    private static double cores(Quantity q) {
        return Quantity.getAmountInBytes(q).doubleValue();
    }

    @ParameterizedTest
    @FieldSource("INSTALLS")
    void theShippedRequestIsAtLeastWhatASaturatedNodeWasMeasuredToNeed(String variant) {
        Map<String, Quantity> requests = agent(Manifests.render(variant)).getResources().getRequests();

        assertThat(cores(requests.get("cpu"))).isGreaterThanOrEqualTo(cores(MEASURED_NEED));
        // No CPU limit: a quota would throttle the agent inside the pods' starts it holds.
        assertThat(agent(Manifests.render(variant)).getResources().getLimits()).doesNotContainKey("cpu");
    }

    @ParameterizedTest
    @FieldSource("VARIANTS")
    void theDocumentedOverlayChangesTheCpuRequestAlone(String variant, @TempDir Path tmp) {
        Path overlay = DocumentedOverlay.write(tmp, "docs/kubernetes.md", "cpu-request", variant);
        Container changed = agent(Manifests.render(overlay));
        Container original = agent(Manifests.render(variant));

        assertThat(changed.getResources().getRequests().get("cpu")).isEqualTo(new Quantity("100m"));
        original.getResources().getRequests().put("cpu", new Quantity("100m"));
        assertThat(changed).isEqualTo(original);
    }
}
