package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.metrics.RepoFiles;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Every {@code helm install} and {@code helm upgrade} the READMEs and docs/kubernetes.md print runs
 * as printed: an install with {@code --dry-run=client} (no cluster needed), an upgrade as the
 * {@code helm template} of the same chart, release, namespace and values (an upgrade needs the
 * release on a cluster). A misspelt flag, a values file that moved, a chart that does not render
 * fails here, not in an operator's shell.
 */
class HelmDocumentedCommandsTest {

    private static final List<String> PAGES = List.of("README.md", "docs/kubernetes.md", "charts/driver-alias-agent/README.md");
    private static final Pattern SHELL = Pattern.compile("```sh\\n(.*?)```", Pattern.DOTALL);

    /** The helm command lines of a page's shell blocks, continuations joined, comments dropped. */
    static List<List<String>> helmCommands(String page) {
        List<List<String>> commands = new ArrayList<>();
        Matcher block = SHELL.matcher(RepoFiles.read(page));
        while (block.find()) {
            for (String line : block.group(1).replaceAll("\\\\\\n\\s*", " ").split("\\n")) {
                String command = line.replaceFirst("\\s+#.*$", "").trim();
                if (command.startsWith("helm install ") || command.startsWith("helm upgrade ")) {
                    commands.add(Arrays.asList(command.split("\\s+")));
                }
            }
        }
        return commands;
    }

    @Test
    void everyDocumentedHelmInstallAndUpgradeRuns() {
        int found = 0;
        for (String page : PAGES) {
            for (List<String> command : helmCommands(page)) {
                found++;
                List<String> args = new ArrayList<>(command.subList(1, command.size()));
                assertThat(args).as("%s: %s", page, command).contains("charts/driver-alias-agent");
                if (args.getFirst().equals("install")) {
                    args.add("--dry-run=client");
                } else {
                    args.set(0, "template");
                    args.remove("--install");
                }
                Helm.Result result = Helm.run(args);
                assertThat(result.succeeded()).as("%s: %s\n%s", page, String.join(" ", command), result.err()).isTrue();
            }
        }
        assertThat(found).as("helm install and upgrade lines").isGreaterThanOrEqualTo(4);
    }
}
