package io.driveralias.agent.live;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.core.AliasPlanner;
import io.driveralias.agent.fs.HostRoot;
import io.driveralias.agent.fs.PathResolver;
import io.driveralias.agent.repair.DriverLocator;
import io.driveralias.agent.repair.HostDriverFiles;
import io.driveralias.agent.repair.RootRepairer;
import io.driveralias.agent.repair.SonameCache;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class WarmupTest {

    @Test
    void aWarmUpInterruptedByKillMinus9IsCleanedAtTheNextStart() throws Exception {
        Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
        // What a killed agent leaves: its warm-up root, with a driver file and a link.
        Path leftover = Files.createTempDirectory(tmp, "driver-alias-warmup-");
        Path lib = Files.createDirectories(leftover.resolve("usr/lib64"));
        Files.writeString(lib.resolve("libjsig.so.1.0.0"), "elf");
        Files.createSymbolicLink(lib.resolve("libjsig.so"), Path.of("/etc/passwd"));
        Path unrelated = Files.createTempDirectory(tmp, "someone-elses-");

        PathResolver resolver = PathResolver.detect(false);
        HostRoot host = new HostRoot("/proc", resolver);
        Warmup.run(new RootRepairer(new DriverLocator(new SonameCache(16), host,
                new HostDriverFiles(host, java.util.List.of(), java.util.Optional.empty())), new AliasPlanner(false)),
                resolver, 2);

        assertThat(leftover).doesNotExist();
        assertThat(Path.of("/etc/passwd")).exists();
        assertThat(unrelated).exists();
        try (var left = Files.newDirectoryStream(tmp, "driver-alias-warmup-*")) {
            assertThat(left).as("the warm-up removes its own root too").isEmpty();
        }
        Files.delete(unrelated);
    }

    @Test
    void theParserWarmsOnAContainersWorthOfTheAgentsOwnTable() {
        assertThat(Warmup.firstLines("a\nb\nc\n", 2)).isEqualTo("a\nb\n");
        assertThat(Warmup.firstLines("a\nb", 5)).isEqualTo("a\nb");
        assertThat(Warmup.firstLines("", 5)).isEmpty();
    }
}
