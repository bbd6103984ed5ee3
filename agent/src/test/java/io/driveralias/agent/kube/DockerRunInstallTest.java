package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.metrics.RepoFiles;
import io.driveralias.agent.testing.DaemonSetAgent;
import io.driveralias.agent.testing.DockerRunLine;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * The install without Kubernetes grants exactly what the DaemonSet grants: the documented
 * {@code docker run} line and the systemd unit's, option by option, against the DaemonSet's agent
 * container translated to {@code docker run} options ({@link DaemonSetAgent}, as LeastPrivilegeIT
 * runs it). What differs is only what has no Kubernetes: the node name, Events, the pod IP.
 */
class DockerRunInstallTest {

    static final String DOC = "docs/install-without-kubernetes.md";
    static final String UNIT = "deploy/driver-alias-agent.service";

    /** How each line names and keeps its container; not a privilege. */
    private static final Set<String> HOUSEKEEPING = Set.of("-d", "--name", "--restart", "--rm");

    static DockerRunLine documented() {
        return DockerRunLine.fromMarkdown(RepoFiles.read(DOC), "docker-run-install");
    }

    /** The options that grant or limit something, sizes in bytes. */
    private static List<List<String>> privileges(DockerRunLine line) {
        List<List<String>> out = new ArrayList<>();
        for (List<String> option : line.options()) {
            if (!HOUSEKEEPING.contains(option.getFirst())) {
                out.add(normalized(option));
            }
        }
        return out;
    }

    private static List<String> normalized(List<String> option) {
        return switch (option.getFirst()) {
            case "--memory" -> List.of("--memory", bytes(option.get(1)));
            case "--tmpfs" -> List.of("--tmpfs", option.get(1).replaceAll("size=(\\w+)", "size=")
                    + bytes(option.get(1).replaceAll(".*size=(\\w+).*", "$1")));
            default -> option;
        };
    }

    private static String bytes(String size) {
        long unit = switch (Character.toLowerCase(size.charAt(size.length() - 1))) {
            case 'k' -> 1L << 10;
            case 'm' -> 1L << 20;
            case 'g' -> 1L << 30;
            default -> 1;
        };
        String digits = unit == 1 ? size : size.substring(0, size.length() - 1);
        return String.valueOf(Long.parseLong(digits) * unit);
    }

    @Test
    void theDocumentedLineGrantsWhatTheDaemonSetGrantsAndNoMore() {
        DaemonSetAgent daemonSet = DaemonSetAgent.load();
        UnaryOperator<String> samePath = p -> p;
        List<String> fromManifest = daemonSet.dockerRunOptions(new DaemonSetAgent.Substitutions(samePath, samePath,
                Map.of("spec.nodeName", "NODE", "metadata.uid", ""), Map.of("DRIVER_ALIAS_KUBERNETES", "off"), Set.of()));
        List<List<String>> expected = new ArrayList<>(privileges(DockerRunLine.parse(
                "docker run " + String.join(" ", fromManifest.stream().map(w -> "'" + w + "'").toList()) + " IMAGE")));
        // No Kubernetes: no downward API for the node name (it only names Events, which are off),
        // no pod (no POD_UID: nothing to look for).
        expected.remove(List.of("--env", "NODE_NAME=NODE"));
        // A Docker host: containerd's snapshots are never a container's root there.
        expected.removeIf(o -> o.getFirst().equals("--mount") && o.get(1).contains("io.containerd.snapshotter"));
        // No pod IP: the metrics port on the host instead.
        expected.add(List.of("--publish", "9470:9470"));

        assertThat(privileges(documented())).containsExactlyInAnyOrderElementsOf(expected);
        assertThat(documented().arguments()).isEqualTo(daemonSet.args());
    }

    @Test
    void theSystemdUnitRunsTheDocumentedContainer() {
        DockerRunLine unit = DockerRunLine.fromUnit(RepoFiles.read(UNIT));

        assertThat(privileges(unit)).isEqualTo(privileges(documented()));
        assertThat(unit.image()).isEqualTo(documented().image());
        assertThat(unit.arguments()).isEqualTo(documented().arguments());
        assertThat(unit.options()).contains(List.of("--rm"), List.of("--name", "driver-alias-agent"));
    }

    /** The check line DockerRunInstallIT runs is the one the README and the runbook print. */
    @Test
    void theReadmeAndTheRunbookPrintTheTestedCheckLine() {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^docker run --rm .* check$").matcher(RepoFiles.read(DOC));
        assertThat(m.find()).isTrue();
        String check = m.group();

        assertThat(RepoFiles.read("README.md")).contains("\n" + check + "\n");
        assertThat(RepoFiles.read("docs/runbook.md")).contains("\n" + check + " <container-id>\n");
    }

    @Test
    void theShellWordsAreSplitAsAShellWould() {
        DockerRunLine line = DockerRunLine.parse("docker run -d --env \"A=x y\" --env 'B=\"q\"' \\\n  --read-only img run --x");

        assertThat(line.options()).containsExactly(List.of("-d"), List.of("--env", "A=x y"), List.of("--env", "B=\"q\""),
                List.of("--read-only"));
        assertThat(line.image()).isEqualTo("img");
        assertThat(line.arguments()).containsExactly("run", "--x");
    }
}
