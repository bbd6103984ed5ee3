package io.driveralias.agent.ldcache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.driveralias.agent.core.FailureReason;
import io.driveralias.agent.fs.Directory;
import io.driveralias.agent.fs.Errno;
import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.fs.NewFile;
import io.driveralias.agent.fs.PathResolver;
import io.driveralias.agent.fs.RootFs;
import io.driveralias.agent.ldcache.LdCacheUpdate.Outcome;
import io.driveralias.agent.testing.Processes;
import java.io.IOException;
import java.io.OutputStream;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The in-root updater on real trees, with the tricks a hostile image can play at /etc, through
 * both resolvers (openat2 and the walk for kernels without it).
 */
@ParameterizedClass(name = "{0}")
@ValueSource(strings = {"openat2", "walk"})
class LdCacheUpdaterTest {

    @Parameter
    String resolverName;

    private static final Path HOST_CACHE = Path.of("/etc/ld.so.cache");
    /** A directory the host's cache lists, so an alias there copies its flags (libc.so.6's). */
    private static final String HOST_LIB_DIR = "/lib/x86_64-linux-gnu";

    @TempDir
    Path tmp;

    private Path root;
    private Path etc;
    private RootFs rootFs;
    private final LdCacheUpdater updater = new LdCacheUpdater();
    private final List<Alias> aliases = List.of(Alias.of(HOST_LIB_DIR, "libcuda.so.1"));

    @BeforeEach
    void setUp() throws IOException {
        root = Files.createDirectories(tmp.resolve("root"));
        etc = root.resolve("etc");
    }

    @AfterEach
    void tearDown() {
        if (rootFs != null) {
            rootFs.close();
        }
    }

    private RootFs rootFs() throws ErrnoException {
        if (rootFs == null) {
            PathResolver resolver = PathResolver.detect(resolverName.equals("walk"));
            assertThat(resolver.name()).isEqualTo(resolverName);
            rootFs = RootFs.openHostDirectory(root.toString(), resolver);
        }
        return rootFs;
    }

    private Path hostCacheCopyIn(Path dir) throws IOException {
        Files.createDirectories(dir);
        return Files.copy(HOST_CACHE, dir.resolve("ld.so.cache"));
    }

    private List<String> etcNames() throws IOException {
        try (Stream<Path> names = Files.list(etc)) {
            return names.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @ParameterizedTest(name = "ldconfig -c {0}")
    @ValueSource(strings = {"new", "compat"})
    void afterAnUpdateTheRealLoaderInTheRootFindsTheDriver(String format) throws Exception {
        LoaderRoot loaderRoot = LoaderRoot.create(root, format);
        Path cache = loaderRoot.cacheFile();
        Processes.check(List.of("chown", "1234:5678", cache.toString()));
        Files.setPosixFilePermissions(cache, PosixFilePermissions.fromString("rw-------"));
        List<Alias> driver = List.of(Alias.of(LoaderRoot.DRIVER_DIR, LoaderRoot.SONAME));

        assertThat(updater.check(rootFs(), driver).outcome()).isEqualTo(Outcome.STALE);
        long start = System.nanoTime();
        LdCacheUpdate update = updater.update(rootFs(), driver);
        System.out.printf("update of a %s cache in-root: %.2f ms%n", format, (System.nanoTime() - start) / 1e6);

        assertThat(update.outcome()).as(update.message()).isEqualTo(Outcome.UPDATED);
        assertThat(loaderRoot.runProbe().output()).isEqualTo("probe 42\n");
        assertThat(Files.getAttribute(cache, "unix:uid")).isEqualTo(1234);
        assertThat(Files.getAttribute(cache, "unix:gid")).isEqualTo(5678);
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(cache))).isEqualTo("rw-------");
        assertThat(etcNames()).containsExactly("ld.so.cache", "ld.so.conf");
        assertThat(updater.update(rootFs(), driver).outcome()).isEqualTo(Outcome.ALREADY_CURRENT);
        assertThat(updater.check(rootFs(), driver).outcome()).isEqualTo(Outcome.ALREADY_CURRENT);
    }

    @Test
    void flagsComeFromTheDirectorysOtherEntries() throws Exception {
        Path cache = hostCacheCopyIn(etc);

        assertThat(updater.update(rootFs(), aliases).outcome()).isEqualTo(Outcome.UPDATED);

        LdCache written = LdCacheCodec.parse(Files.readAllBytes(cache));
        assertThat(written.resolve("libcuda.so.1", 0x0303)).hasValue(HOST_LIB_DIR + "/libcuda.so.1");
        assertThat(written.entries()).hasSize(LdCacheCodec.parse(Files.readAllBytes(HOST_CACHE)).entries().size() + 1);
    }

    @Test
    void aContainerWithoutACacheGetsNone() throws Exception {
        assertThat(updater.update(rootFs(), aliases).outcome()).isEqualTo(Outcome.NO_CACHE);
        Files.createDirectories(etc);
        assertThat(updater.update(rootFs(), aliases).outcome()).isEqualTo(Outcome.NO_CACHE);
        assertThat(etcNames()).isEmpty();
    }

    @Test
    void aSymlinkToAHostFileIsNeitherFollowedNorReplaced() throws Exception {
        Path hostFile = hostCacheCopyIn(tmp.resolve("host"));
        byte[] before = Files.readAllBytes(hostFile);
        Files.createDirectories(etc);
        Files.createSymbolicLink(etc.resolve("ld.so.cache"), hostFile);

        LdCacheUpdate update = updater.update(rootFs(), aliases);

        assertThat(update.outcome()).isEqualTo(Outcome.FAILED);
        assertThat(update.reason()).hasValue(FailureReason.UNSAFE_PATH);
        assertThat(update.message()).contains("symlink");
        assertThat(Files.readAllBytes(hostFile)).isEqualTo(before);
        assertThat(Files.isSymbolicLink(etc.resolve("ld.so.cache"))).isTrue();
        assertThat(etcNames()).containsExactly("ld.so.cache");
    }

    @Test
    void anEtcSymlinkToAHostDirectoryStaysInsideTheRoot() throws Exception {
        Path hostEtc = tmp.resolve("host-etc");
        Path hostFile = hostCacheCopyIn(hostEtc);
        byte[] before = Files.readAllBytes(hostFile);
        Files.createSymbolicLink(etc, hostEtc); // absolute: resolved inside the root, where it is absent

        assertThat(updater.update(rootFs(), aliases).outcome()).isEqualTo(Outcome.NO_CACHE);
        assertThat(Files.readAllBytes(hostFile)).isEqualTo(before);
        try (Stream<Path> names = Files.list(hostEtc)) {
            assertThat(names).hasSize(1);
        }
    }

    @Test
    void aFifoIsNeverOpened() throws Exception {
        Files.createDirectories(etc);
        Processes.check(List.of("mkfifo", etc.resolve("ld.so.cache").toString()));

        LdCacheUpdate update = assertTimeoutPreemptively(Duration.ofSeconds(5), () -> updater.update(rootFs(), aliases));

        assertThat(update.reason()).hasValue(FailureReason.CONFLICT);
        assertThat(update.message()).contains("not a regular file");
    }

    @Test
    void aDirectoryIsLeftAlone() throws Exception {
        Files.createDirectories(etc.resolve("ld.so.cache"));

        LdCacheUpdate update = updater.update(rootFs(), aliases);

        assertThat(update.reason()).hasValue(FailureReason.CONFLICT);
        assertThat(etc.resolve("ld.so.cache")).isDirectory();
        assertThat(etcNames()).containsExactly("ld.so.cache");
    }

    @Test
    void aHugeFileIsNotRead() throws Exception {
        Files.createDirectories(etc);
        try (RandomAccessFile huge = new RandomAccessFile(etc.resolve("ld.so.cache").toFile(), "rw")) {
            huge.setLength(LdCacheCodec.MAX_CACHE_BYTES + 1L); // sparse
        }

        LdCacheUpdate update = updater.update(rootFs(), aliases);

        assertThat(update.reason()).hasValue(FailureReason.IO);
        assertThat(update.message()).contains("not read");
        assertThat(Files.size(etc.resolve("ld.so.cache"))).isEqualTo(LdCacheCodec.MAX_CACHE_BYTES + 1L);
    }

    @Test
    void aCacheTheCodecCannotReadIsLeftAsItIs() throws Exception {
        Files.createDirectories(etc);
        Files.writeString(etc.resolve("ld.so.cache"), "glibc-ld.so.cache1.1 but not really");

        LdCacheUpdate update = updater.update(rootFs(), aliases);

        assertThat(update.reason()).hasValue(FailureReason.IO);
        assertThat(Files.readString(etc.resolve("ld.so.cache"))).isEqualTo("glibc-ld.so.cache1.1 but not really");
        assertThat(etcNames()).containsExactly("ld.so.cache");
    }

    @Test
    void anEtcMountedFromTheHostIsRefused() throws Exception {
        assumeTrue(Processes.isRoot(), "mounts need root; .ci/run runs the tests as root");
        Path hostEtc = tmp.resolve("host-etc");
        Path hostFile = hostCacheCopyIn(hostEtc);
        byte[] before = Files.readAllBytes(hostFile);
        Files.createDirectories(etc);
        Processes.check(List.of("mount", "--bind", hostEtc.toString(), etc.toString()));
        try {
            LdCacheUpdate update = updater.update(rootFs(), aliases);

            assertThat(update.reason()).hasValue(FailureReason.UNSAFE_PATH);
            assertThat(update.message()).contains("mount point");
            assertThat(Files.readAllBytes(hostFile)).isEqualTo(before);
        } finally {
            Processes.check(List.of("umount", etc.toString()));
        }
    }

    @Test
    void aCacheFileMountedFromTheHostIsRefused() throws Exception {
        assumeTrue(Processes.isRoot(), "mounts need root; .ci/run runs the tests as root");
        Path hostFile = hostCacheCopyIn(tmp.resolve("host"));
        byte[] before = Files.readAllBytes(hostFile);
        Files.createDirectories(etc);
        Files.createFile(etc.resolve("ld.so.cache"));
        Processes.check(List.of("mount", "--bind", hostFile.toString(), etc.resolve("ld.so.cache").toString()));
        try {
            LdCacheUpdate update = updater.update(rootFs(), aliases);

            assertThat(update.reason()).hasValue(FailureReason.UNSAFE_PATH);
            assertThat(update.message()).contains("mount point");
            assertThat(Files.readAllBytes(hostFile)).isEqualTo(before);
        } finally {
            Processes.check(List.of("umount", etc.resolve("ld.so.cache").toString()));
        }
    }

    @Test
    void aReadOnlyRootIsReportedAsSuch() throws Exception {
        assumeTrue(Processes.isRoot(), "mounts need root; .ci/run runs the tests as root");
        Path cache = hostCacheCopyIn(etc);
        Processes.check(List.of("mount", "--bind", root.toString(), root.toString()));
        try {
            Processes.check(List.of("mount", "-o", "remount,ro,bind", root.toString()));

            LdCacheUpdate update = updater.update(rootFs(), aliases);

            assertThat(update.reason()).hasValue(FailureReason.READ_ONLY);
            assertThat(Files.readAllBytes(cache)).isEqualTo(Files.readAllBytes(HOST_CACHE));
        } finally {
            rootFs.close();
            rootFs = null;
            Processes.check(List.of("umount", root.toString()));
        }
        assertThat(etcNames()).containsExactly("ld.so.cache");
    }

    @Test
    void aFullFilesystemLeavesNoTemporaryBehind() throws Exception {
        assumeTrue(Processes.isRoot(), "mounts need root; .ci/run runs the tests as root");
        Processes.check(List.of("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", root.toString()));
        try {
            Path cache = hostCacheCopyIn(etc);
            Path filler = root.resolve("filler");
            try (OutputStream out = Files.newOutputStream(filler)) {
                byte[] block = new byte[4096];
                while (true) {
                    out.write(block);
                    out.flush();
                }
            } catch (IOException full) {
                // the filesystem is full now
            }
            try (RandomAccessFile f = new RandomAccessFile(filler.toFile(), "rw")) {
                f.setLength(Math.max(0, f.length() - 8192)); // room for the temporary, not for the cache
            }

            LdCacheUpdate update = updater.update(rootFs(), aliases);

            assertThat(update.outcome()).isEqualTo(Outcome.FAILED);
            assertThat(update.message()).contains("ENOSPC");
            assertThat(etcNames()).containsExactly("ld.so.cache");
            assertThat(Files.readAllBytes(cache)).isEqualTo(Files.readAllBytes(HOST_CACHE));
        } finally {
            if (rootFs != null) {
                rootFs.close();
                rootFs = null;
            }
            Processes.check(List.of("umount", root.toString()));
        }
    }

    @Test
    void aHardLinkedCacheIsReplacedAndItsOtherLinkKeepsTheOldContent() throws Exception {
        Path cache = hostCacheCopyIn(etc);
        Path other = Files.createLink(etc.resolve("ld.so.cache.orig"), cache);
        byte[] before = Files.readAllBytes(cache);

        LdCacheUpdate update = updater.update(rootFs(), aliases);

        assertThat(update.outcome()).as(update.message()).isEqualTo(Outcome.UPDATED);
        assertThat(LoaderRoot.printCache(cache)).contains("libcuda.so.1 (libc6,x86-64) => " + HOST_LIB_DIR + "/libcuda.so.1");
        assertThat(Files.readAllBytes(other)).isEqualTo(before);
        assertThat(Files.getAttribute(other, "unix:nlink")).isEqualTo(1);
        assertThat(etcNames()).containsExactly("ld.so.cache", "ld.so.cache.orig");
    }

    /**
     * Docker's overlay2 (index=off): renaming over a lower-layer file with several links copies
     * it up under a new inode number, which made every update fail with EEXIST ("changed
     * meanwhile") and retry forever.
     */
    @Test
    void aHardLinkedCacheInALowerOverlayLayerIsReplaced() throws Exception {
        assumeTrue(Processes.isRoot(), "mounts need root; .ci/run runs the tests as root");
        Path lower = tmp.resolve("lower");
        Path lowerCache = hostCacheCopyIn(lower.resolve("etc"));
        Files.createLink(lower.resolve("etc/ld.so.cache.orig"), lowerCache);
        byte[] before = Files.readAllBytes(lowerCache);
        Path upper = Files.createDirectories(tmp.resolve("upper"));
        Path work = Files.createDirectories(tmp.resolve("work"));
        Processes.check(List.of("mount", "-t", "overlay", "overlay", "-o",
                "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work, root.toString()));
        try {
            LdCacheUpdate update = updater.update(rootFs(), aliases);

            assertThat(update.outcome()).as(update.message()).isEqualTo(Outcome.UPDATED);
            assertThat(LoaderRoot.printCache(etc.resolve("ld.so.cache")))
                    .contains("libcuda.so.1 (libc6,x86-64) => " + HOST_LIB_DIR + "/libcuda.so.1");
            assertThat(Files.readAllBytes(etc.resolve("ld.so.cache.orig"))).isEqualTo(before);
            assertThat(etcNames()).containsExactly("ld.so.cache", "ld.so.cache.orig");
            assertThat(updater.update(rootFs(), aliases).outcome()).isEqualTo(Outcome.ALREADY_CURRENT);
        } finally {
            rootFs.close();
            rootFs = null;
            Processes.check(List.of("umount", root.toString()));
        }
        assertThat(Files.readAllBytes(lowerCache)).isEqualTo(before);
    }

    @Test
    void leftoverTemporariesOfTheCacheAreRemovedAndNothingElse() throws Exception {
        Path cache = hostCacheCopyIn(etc);
        Path hostFile = hostCacheCopyIn(tmp.resolve("host"));
        Files.writeString(etc.resolve(".ld.so.cache.driver-alias-1a2b3c"), "half a cache");
        Files.writeString(etc.resolve(".ld.so.cache.driver-alias-0123456789abcdef"), "");
        Files.createSymbolicLink(etc.resolve(".ld.so.cache.driver-alias-dead"), hostFile);
        Files.createDirectories(etc.resolve(".ld.so.cache.driver-alias-beef"));
        Files.writeString(etc.resolve(".ld.so.cache.driver-alias-xyz"), "not the agent's pattern");
        Files.writeString(etc.resolve(".ld.so.cache.driver-alias-0123456789abcdef0"), "too long a suffix");
        Files.writeString(etc.resolve(".passwd.driver-alias-12"), "another file's");
        Files.writeString(etc.resolve("ld.so.cache.driver-alias-12"), "no leading dot");
        List<String> others = List.of(".ld.so.cache.driver-alias-0123456789abcdef0", ".ld.so.cache.driver-alias-beef",
                ".ld.so.cache.driver-alias-dead", ".ld.so.cache.driver-alias-xyz", ".passwd.driver-alias-12", "ld.so.cache",
                "ld.so.cache.driver-alias-12");

        assertThat(updater.check(rootFs(), aliases).outcome()).isEqualTo(Outcome.STALE);
        assertThat(etcNames()).hasSize(others.size() + 2); // a check writes nothing, removes nothing

        assertThat(updater.update(rootFs(), aliases).outcome()).isEqualTo(Outcome.UPDATED);

        assertThat(etcNames()).containsExactlyElementsOf(others);
        assertThat(Files.isSymbolicLink(etc.resolve(".ld.so.cache.driver-alias-dead"))).isTrue();
        assertThat(Files.readAllBytes(hostFile)).isEqualTo(Files.readAllBytes(HOST_CACHE));
        // Also when there is nothing to write.
        Files.writeString(etc.resolve(".ld.so.cache.driver-alias-77"), "");
        assertThat(updater.update(rootFs(), aliases).outcome()).isEqualTo(Outcome.ALREADY_CURRENT);
        assertThat(etcNames()).containsExactlyElementsOf(others);
        assertThat(cache).exists();
    }

    @Test
    void aCacheTheUpdateWouldPushPastTheCapIsLeftExactlyAsItIs() throws Exception {
        Files.createDirectories(etc);
        // Valid for glibc (one entry, then bytes nothing points at), 16 bytes short of the cap.
        byte[] big = new byte[CacheFormat.MAX_CACHE_BYTES - 16];
        java.nio.ByteBuffer.wrap(big).order(java.nio.ByteOrder.LITTLE_ENDIAN).put(CacheFormat.NEW_MAGIC).putInt(1).putInt(64)
                .put((byte) CacheFormat.ENDIAN_LITTLE).put(new byte[3]).putInt(0).put(new byte[12])
                .putInt(0x0303).putInt(72 + 22).putInt(72).putInt(0).putLong(0)
                .put((HOST_LIB_DIR + "/libc.so.6\0").getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
        Path cache = Files.write(etc.resolve("ld.so.cache"), big);
        assertThat(LoaderRoot.printCache(cache)).contains("libc.so.6 (libc6,x86-64) => " + HOST_LIB_DIR + "/libc.so.6");

        LdCacheUpdate update = updater.update(rootFs(), aliases);

        assertThat(update.outcome()).isEqualTo(Outcome.FAILED);
        assertThat(update.reason()).hasValue(FailureReason.IO);
        assertThat(update.message()).contains("left as it is", "would be", "at most " + CacheFormat.MAX_CACHE_BYTES);
        assertThat(Files.readAllBytes(cache)).isEqualTo(big);
        assertThat(etcNames()).containsExactly("ld.so.cache");
    }

    @Test
    void aCacheChangedMeanwhileIsPutBackNotOverwritten() throws Exception {
        Path cache = hostCacheCopyIn(etc);
        Files.writeString(etc.resolve("other"), "x");
        try (Directory dir = rootFs().openDirectory("/etc", true); NewFile out = dir.newFile("ld.so.cache")) {
            var staleView = dir.statEntry("other"); // what the agent read is not what is there now
            out.write(new byte[] {1, 2, 3}, 3);

            assertThatThrownBy(() -> out.replace(staleView, null, 0644, 0, 0))
                    .isInstanceOfSatisfying(ErrnoException.class, e -> assertThat(e.is(Errno.EEXIST)).isTrue());
        }
        assertThat(Files.readAllBytes(cache)).isEqualTo(Files.readAllBytes(HOST_CACHE));
        assertThat(etcNames()).containsExactly("ld.so.cache", "other");
        assertThat(Files.isRegularFile(cache, LinkOption.NOFOLLOW_LINKS)).isTrue();
    }
}
