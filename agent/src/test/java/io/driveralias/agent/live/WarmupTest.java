package io.driveralias.agent.live;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.core.AliasPlanner;
import io.driveralias.agent.fs.HostRoot;
import io.driveralias.agent.fs.PathResolver;
import io.driveralias.agent.ldcache.LdSoCache;
import io.driveralias.agent.repair.DriverLocator;
import io.driveralias.agent.repair.HostDriverFiles;
import io.driveralias.agent.repair.LoaderCache;
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
    void withALoaderCacheEveryTenthRoundRewritesIt() throws Exception {
        Path hostProc = Files.createTempDirectory("daa-warmup-proc-");
        Path etc = Files.createDirectories(hostProc.resolve("1/root/etc"));
        // A real distribution's cache: this Debian machine's own.
        Files.copy(Path.of("/etc/ld.so.cache"), etc.resolve("ld.so.cache"));
        java.util.Optional<byte[]> cache = Warmup.hostLoaderCache(hostProc.toString(), PathResolver.detect(false));
        assertThat(cache).hasValueSatisfying(bytes -> assertThat(bytes).isEqualTo(readAll(Path.of("/etc/ld.so.cache"))));
        java.util.List<LoaderCache.Status> statuses = new java.util.concurrent.CopyOnWriteArrayList<>();
        LoaderCache real = new LdSoCache();
        LoaderCache recording = (root, entries, apply) -> {
            LoaderCache.Result result = real.refresh(root, entries, apply);
            statuses.add(result.status());
            return result;
        };
        PathResolver resolver = PathResolver.detect(false);
        HostRoot host = new HostRoot("/proc", resolver);

        Warmup.run(new RootRepairer(new DriverLocator(new SonameCache(16), host,
                new HostDriverFiles(host, java.util.List.of(), java.util.Optional.empty())), new AliasPlanner(false), recording),
                resolver, 20, () -> false, cache);

        assertThat(statuses).hasSize(20);
        assertThat(statuses.stream().filter(s -> s == LoaderCache.Status.UPDATED).count()).as("rounds 0 and 10").isEqualTo(2);
        assertThat(statuses).doesNotContain(LoaderCache.Status.FAILED, LoaderCache.Status.NO_CACHE);
        Files.delete(etc.resolve("ld.so.cache"));
        assertThat(Warmup.hostLoaderCache(hostProc.toString(), PathResolver.detect(false))).as("none there").isEmpty();
        Files.write(etc.resolve("ld.so.cache"), new byte[Warmup.MAX_WARMUP_CACHE + 1]);
        assertThat(Warmup.hostLoaderCache(hostProc.toString(), PathResolver.detect(false))).as("over the bound").isEmpty();
        Files.delete(etc.resolve("ld.so.cache"));
        Files.delete(etc);
        Files.delete(etc.getParent());
        Files.delete(etc.getParent().getParent());
        Files.delete(hostProc);
    }

    private static byte[] readAll(Path path) {
        try {
            return Files.readAllBytes(path);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Test
    void theParserWarmsOnAContainersWorthOfTheAgentsOwnTable() {
        assertThat(Warmup.firstLines("a\nb\nc\n", 2)).isEqualTo("a\nb\n");
        assertThat(Warmup.firstLines("a\nb", 5)).isEqualTo("a\nb");
        assertThat(Warmup.firstLines("", 5)).isEmpty();
    }
}
