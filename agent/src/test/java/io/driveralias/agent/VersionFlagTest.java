package io.driveralias.agent;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.config.ConfigParser;
import io.driveralias.agent.metrics.RepoFiles;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@code --version} answers what runs, and exits 0 before any configuration is read. */
class VersionFlagTest {

    @Test
    void printsTheVersionAndExitsZeroWhateverElseIsGiven() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();

        int exit = Main.run(List.of("--version", "--no-such-option"), Map.of("DRIVER_ALIAS_LISTEN", "nonsense"),
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));

        assertThat(exit).isZero();
        assertThat(out.toString(StandardCharsets.UTF_8)).isEqualTo("driver-alias-agent " + ConfigParser.version() + "\n");
        assertThat(err.toString(StandardCharsets.UTF_8)).isEmpty();
        // The build's version, from classes as from the jar: the parent pom's, a semantic version.
        assertThat(ConfigParser.version()).isEqualTo(RepoFiles.projectVersion())
                .matches("\\d+\\.\\d+\\.\\d+(-[0-9A-Za-z.-]+)?");
    }

    @Test
    void theHelpListsIt() {
        assertThat(ConfigParser.usage()).contains("--version").contains("--log-level");
    }
}
