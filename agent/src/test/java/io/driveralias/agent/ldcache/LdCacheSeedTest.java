package io.driveralias.agent.ldcache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.driveralias.agent.core.FailureReason;
import io.driveralias.agent.fs.Directory;
import io.driveralias.agent.fs.PathResolver;
import io.driveralias.agent.fs.ReadableFile;
import io.driveralias.agent.fs.RootFs;
import io.driveralias.agent.ldcache.LdCacheUpdate.Outcome;
import io.driveralias.agent.testing.Processes;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Cache entries put in place before a container starts, its root not mounted yet: the cache of
 * a lower layer read through one open file, the updated one written into the writable
 * layer's {@code /etc} through its directory handle.
 */
class LdCacheSeedTest {

    private static final String LISTED = LoaderRoot.SONAME + " (libc6,x86-64) => " + LoaderRoot.DRIVER_DIR + "/" + LoaderRoot.SONAME;

    @TempDir
    Path tmp;

    private LoaderRoot lower;
    private Path upperEtc;
    private RootFs lowerRoot;
    private RootFs upperRoot;
    private final LdCacheUpdater updater = new LdCacheUpdater();
    private final List<Alias> driver = List.of(Alias.of(LoaderRoot.DRIVER_DIR, LoaderRoot.SONAME));

    @BeforeEach
    void layers() throws Exception {
        lower = LoaderRoot.create(tmp.resolve("lower"), "new");
        Processes.check(List.of("chown", "1234:5678", lower.cacheFile().toString()));
        Files.setPosixFilePermissions(lower.cacheFile(), PosixFilePermissions.fromString("rw-r-----"));
        upperEtc = Files.createDirectories(tmp.resolve("upper/etc"));
        lowerRoot = RootFs.openHostDirectory(lower.root.toString(), PathResolver.detect(false));
        upperRoot = RootFs.openHostDirectory(tmp.resolve("upper").toString(), PathResolver.detect(false));
    }

    @AfterEach
    void close() {
        lowerRoot.close();
        upperRoot.close();
    }

    private LdCacheUpdate seed(RootFs from, List<Alias> aliases) throws Exception {
        try (ReadableFile current = from.openRegularFile("/etc/ld.so.cache"); Directory etc = upperRoot.openDirectory("/etc", true)) {
            return updater.seed(current, etc, aliases);
        }
    }

    private List<String> upperNames() throws Exception {
        try (Stream<Path> names = Files.list(upperEtc)) {
            return names.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void aWritableLayerWithoutACacheGetsTheLowerOneWithTheEntriesAndItsModeAndOwner() throws Exception {
        byte[] before = Files.readAllBytes(lower.cacheFile());

        LdCacheUpdate update = seed(lowerRoot, driver);

        assertThat(update.outcome()).as(update.message()).isEqualTo(Outcome.UPDATED);
        Path seeded = upperEtc.resolve("ld.so.cache");
        assertThat(LoaderRoot.printCache(seeded)).contains(LISTED);
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(seeded))).isEqualTo("rw-r-----");
        assertThat(Files.getAttribute(seeded, "unix:uid")).isEqualTo(1234);
        assertThat(Files.getAttribute(seeded, "unix:gid")).isEqualTo(5678);
        assertThat(Files.readAllBytes(lower.cacheFile())).isEqualTo(before);
        assertThat(upperNames()).containsExactly("ld.so.cache");
        // What the container will see once its layers are merged: the real loader finds the driver.
        Files.copy(seeded, lower.cacheFile(), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        assertThat(lower.runProbe().output()).isEqualTo("probe 42\n");
    }

    @Test
    void aCacheAlreadyInTheWritableLayerIsReplaced() throws Exception {
        Files.writeString(upperEtc.resolve("ld.so.cache"), "an older cache of the container's own");

        LdCacheUpdate update = seed(lowerRoot, driver);

        assertThat(update.outcome()).as(update.message()).isEqualTo(Outcome.UPDATED);
        assertThat(LoaderRoot.printCache(upperEtc.resolve("ld.so.cache"))).contains(LISTED);
        assertThat(upperNames()).containsExactly("ld.so.cache");
    }

    @Test
    void theWritableLayersOwnCacheIsUpdatedInPlaceOfItself() throws Exception {
        Files.copy(lower.cacheFile(), upperEtc.resolve("ld.so.cache"));

        LdCacheUpdate update = seed(upperRoot, driver);

        assertThat(update.outcome()).as(update.message()).isEqualTo(Outcome.UPDATED);
        assertThat(LoaderRoot.printCache(upperEtc.resolve("ld.so.cache"))).contains(LISTED);
        assertThat(seed(upperRoot, driver).outcome()).isEqualTo(Outcome.ALREADY_CURRENT);
    }

    @Test
    void nothingIsWrittenWhenTheLowerCacheListsTheAliasesAlready() throws Exception {
        Files.write(lower.cacheFile(), LdCacheCodec.rewrite(Files.readAllBytes(lower.cacheFile()), driver));

        assertThat(seed(lowerRoot, driver).outcome()).isEqualTo(Outcome.ALREADY_CURRENT);
        assertThat(upperNames()).isEmpty();
    }

    @Test
    void flagsGivenWithTheAliasAreWhatTheEntrySays() throws Exception {
        LdCacheUpdate update = seed(lowerRoot, List.of(Alias.of("/opt/elsewhere", "libother.so.1").withFlags(0x0803)));

        assertThat(update.outcome()).as(update.message()).isEqualTo(Outcome.UPDATED);
        assertThat(LoaderRoot.printCache(upperEtc.resolve("ld.so.cache")))
                .contains("libother.so.1 (libc6,x32) => /opt/elsewhere/libother.so.1");
    }

    @Test
    void aSymlinkOrDirectoryInTheWritableLayerIsLeftAlone() throws Exception {
        Path hostFile = Files.writeString(tmp.resolve("host-file"), "host");
        Files.createSymbolicLink(upperEtc.resolve("ld.so.cache"), hostFile);

        LdCacheUpdate update = seed(lowerRoot, driver);

        assertThat(update.reason()).hasValue(FailureReason.UNSAFE_PATH);
        assertThat(Files.readString(hostFile)).isEqualTo("host");
        assertThat(Files.isSymbolicLink(upperEtc.resolve("ld.so.cache"))).isTrue();

        Files.delete(upperEtc.resolve("ld.so.cache"));
        Files.createDirectory(upperEtc.resolve("ld.so.cache"));
        assertThat(seed(lowerRoot, driver).reason()).hasValue(FailureReason.CONFLICT);
        assertThat(upperEtc.resolve("ld.so.cache")).isDirectory();
        assertThat(upperNames()).containsExactly("ld.so.cache");
    }

    @Test
    void aWhiteoutIsNotReplaced() throws Exception {
        assumeTrue(Processes.isRoot(), "mknod needs root; .ci/run runs the tests as root");
        Processes.check(List.of("mknod", upperEtc.resolve("ld.so.cache").toString(), "c", "0", "0"));

        assertThat(seed(lowerRoot, driver).reason()).hasValue(FailureReason.CONFLICT);
        assertThat(upperNames()).containsExactly("ld.so.cache");
    }

    @Test
    void leftoversOfAnEarlierSeedAreRemoved() throws Exception {
        Files.writeString(upperEtc.resolve(".ld.so.cache.driver-alias-42"), "half");

        assertThat(seed(lowerRoot, driver).outcome()).isEqualTo(Outcome.UPDATED);
        assertThat(upperNames()).containsExactly("ld.so.cache");
    }

    @Test
    void aCacheTheAgentCannotReadIsReported() throws Exception {
        Files.writeString(lower.cacheFile(), "glibc-ld.so.cache1.1 but not really");

        LdCacheUpdate update = seed(lowerRoot, driver);

        assertThat(update.reason()).hasValue(FailureReason.IO);
        assertThat(update.message()).contains("left as it is");
        assertThat(upperNames()).isEmpty();
    }
}
