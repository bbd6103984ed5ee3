package io.driveralias.agent.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The README and docs/ stand on their own: every link is relative, names a file of the
 * repository, and, with a #fragment, a heading of that file (GitHub's anchors: lower case,
 * punctuation dropped, spaces to dashes). The README starts with installing.
 */
class DocumentationLinksTest {

    private static final Pattern LINK = Pattern.compile("\\[[^]]*]\\(([^)\\s]+)\\)");
    private static final Pattern HEADING = Pattern.compile("(?m)^#{1,6} (.+)$");

    private static List<Path> pages() throws IOException {
        List<Path> pages = new ArrayList<>(List.of(RepoFiles.path("README.md")));
        try (Stream<Path> docs = Files.list(RepoFiles.path("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
        }
        return pages;
    }

    @Test
    void everyLinkStaysInTheRepositoryAndReachesItsTarget() throws IOException {
        List<String> broken = new ArrayList<>();
        int links = 0;
        for (Path page : pages()) {
            String text = Files.readString(page);
            Matcher m = LINK.matcher(text);
            while (m.find()) {
                links++;
                String target = m.group(1);
                String where = RepoFiles.root().relativize(page) + ": " + target;
                if (target.contains("://") || target.startsWith("/") || target.startsWith("mailto:")) {
                    broken.add(where + " (leaves the repository)");
                    continue;
                }
                String file = target.contains("#") ? target.substring(0, target.indexOf('#')) : target;
                Path resolved = file.isEmpty() ? page : page.getParent().resolve(file).normalize();
                if (!resolved.startsWith(RepoFiles.root()) || !Files.exists(resolved)) {
                    broken.add(where + " (no such file)");
                    continue;
                }
                if (target.contains("#") && !anchors(Files.readString(resolved)).contains(target.substring(target.indexOf('#') + 1))) {
                    broken.add(where + " (no such heading)");
                }
            }
        }
        assertThat(links).isGreaterThan(20);
        assertThat(broken).isEmpty();
    }

    @Test
    void noPageMentionsAPathOutsideTheRepository() throws IOException {
        for (Path page : pages()) {
            assertThat(Files.readString(page)).as(page.toString()).doesNotContain("../shared", "DESIGN.md");
        }
    }

    @Test
    void theReadmeStartsWithInstallingThenVerifyingUpgradingAndUninstalling() {
        List<String> headings = new ArrayList<>();
        Matcher m = HEADING.matcher(RepoFiles.read("README.md"));
        while (m.find()) {
            headings.add(m.group(1));
        }
        assertThat(headings).startsWith("driver-alias-agent", "Install on Kubernetes", "Verify", "Upgrade", "Uninstall",
                "Which runtimes", "Prerequisites");
        // The first screen: the install commands within the first 40 lines.
        assertThat(RepoFiles.read("README.md").lines().limit(40).toList())
                .anyMatch(l -> l.startsWith("kubectl apply -k k8s/"));
    }

    static List<String> anchors(String markdown) {
        List<String> anchors = new ArrayList<>();
        Matcher m = HEADING.matcher(markdown);
        while (m.find()) {
            anchors.add(m.group(1).trim().toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9 _-]", "").replace(' ', '-'));
        }
        return anchors;
    }
}
