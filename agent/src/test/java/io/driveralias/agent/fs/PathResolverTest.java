package io.driveralias.agent.fs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.driveralias.agent.testing.Processes;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.ValueSource;

/** Both resolvers, same tree, same answers: the walk must be as strict as openat2. */
@ParameterizedClass(name = "{0}")
@ValueSource(strings = {"openat2", "walk"})
class PathResolverTest {

    @Parameter
    String resolverName;

    @TempDir
    Path tmp;

    private Path root;
    private Path outside;
    private PathResolver resolver;
    private int rootFd = -1;

    @BeforeEach
    void setUp() throws Exception {
        resolver = PathResolver.detect(resolverName.equals("walk"));
        assertThat(resolver.name()).as("this kernel must have openat2 for the openat2 run").isEqualTo(resolverName);
        root = Files.createDirectories(tmp.resolve("root"));
        outside = Files.createDirectories(tmp.resolve("outside"));
        Files.writeString(outside.resolve("secret"), "host");
        Files.createDirectories(root.resolve("usr/lib/x86_64-linux-gnu"));
        Files.writeString(root.resolve("usr/lib/x86_64-linux-gnu/libc.so.6"), "inside");
        rootFd = Libc.openHost(root.toString(), OpenFlags.O_PATH | OpenFlags.O_DIRECTORY);
    }

    @AfterEach
    void tearDown() {
        Libc.close(rootFd);
    }

    private FileStat statOf(String path) throws ErrnoException {
        int fd = resolver.open(rootFd, path, OpenFlags.O_PATH, false);
        try {
            return Libc.statx(fd, "", false);
        } finally {
            Libc.close(fd);
        }
    }

    private FileStat hostStat(Path p) throws ErrnoException {
        int fd = Libc.openHost(p.toString(), OpenFlags.O_PATH | OpenFlags.O_NOFOLLOW);
        try {
            return Libc.statx(fd, "", false);
        } finally {
            Libc.close(fd);
        }
    }

    private int errnoOf(String path, int flags, boolean noXdev) {
        try {
            Libc.close(resolver.open(rootFd, path, flags, noXdev));
            return 0;
        } catch (ErrnoException e) {
            return e.errno();
        }
    }

    @Test
    void plainPathsResolveInsideTheRoot() throws Exception {
        assertThat(statOf("/usr/lib/x86_64-linux-gnu/libc.so.6").sameFile(
                hostStat(root.resolve("usr/lib/x86_64-linux-gnu/libc.so.6")))).isTrue();
        assertThat(statOf("usr/lib/x86_64-linux-gnu/../x86_64-linux-gnu/./libc.so.6").sameFile(
                hostStat(root.resolve("usr/lib/x86_64-linux-gnu/libc.so.6")))).isTrue();
        assertThat(statOf("/").sameFile(hostStat(root))).isTrue();
    }

    @Test
    void anAbsoluteSymlinkToAHostPathStaysInTheRoot() throws Exception {
        Files.createSymbolicLink(root.resolve("usr/lib64"), outside);

        assertThat(errnoOf("/usr/lib64/secret", OpenFlags.O_PATH, false)).isEqualTo(Errno.ENOENT);

        // The same path made inside the root is what the link reaches.
        Path inside = Files.createDirectories(root.resolve(outside.toString().substring(1)));
        Files.writeString(inside.resolve("secret"), "container");
        assertThat(statOf("/usr/lib64/secret").sameFile(hostStat(inside.resolve("secret")))).isTrue();
    }

    @Test
    void dotDotCannotClimbAboveTheRoot() throws Exception {
        Files.createSymbolicLink(root.resolve("usr/lib64"), Path.of("../../../../../.."));

        assertThat(statOf("/usr/lib64").sameFile(hostStat(root))).isTrue();
        assertThat(statOf("/../../..").sameFile(hostStat(root))).isTrue();
        assertThat(errnoOf("/usr/lib64/outside/secret", OpenFlags.O_PATH, false)).isEqualTo(Errno.ENOENT);
    }

    @Test
    void symlinkLoopsAndLongChainsEndInEloop() throws Exception {
        Files.createSymbolicLink(root.resolve("a"), Path.of("b"));
        Files.createSymbolicLink(root.resolve("b"), Path.of("/a"));
        assertThat(errnoOf("/a", OpenFlags.O_PATH, false)).isEqualTo(Errno.ELOOP);

        Files.createSymbolicLink(root.resolve("self"), Path.of("self"));
        assertThat(errnoOf("/self/x", OpenFlags.O_PATH | OpenFlags.O_DIRECTORY, false)).isEqualTo(Errno.ELOOP);

        // 40 links are allowed, 41 are not, as in the kernel.
        Files.writeString(root.resolve("end"), "x");
        Path previous = Path.of("end");
        for (int i = 1; i <= 41; i++) {
            Files.createSymbolicLink(root.resolve("c" + i), previous);
            previous = Path.of("c" + i);
        }
        assertThat(errnoOf("/c40", OpenFlags.O_PATH, false)).isZero();
        assertThat(errnoOf("/c41", OpenFlags.O_PATH, false)).isEqualTo(Errno.ELOOP);
    }

    @Test
    void noFollowOpensTheLinkItselfAndODirectoryRefusesFiles() throws Exception {
        Files.createSymbolicLink(root.resolve("link"), Path.of("/usr/lib/x86_64-linux-gnu/libc.so.6"));

        int fd = resolver.open(rootFd, "/link", OpenFlags.O_PATH | OpenFlags.O_NOFOLLOW, false);
        try {
            assertThat(Libc.statx(fd, "", false).isSymlink()).isTrue();
        } finally {
            Libc.close(fd);
        }
        assertThat(errnoOf("/usr/lib/x86_64-linux-gnu/libc.so.6", OpenFlags.O_RDONLY | OpenFlags.O_DIRECTORY, false))
                .isEqualTo(Errno.ENOTDIR);
        assertThat(errnoOf("/usr/lib/x86_64-linux-gnu/libc.so.6/x", OpenFlags.O_PATH, false))
                .isEqualTo(Errno.ENOTDIR);
    }

    @Test
    void magicLinksAreRefused() throws Exception {
        // Resolve from the host's own root: /proc/self/root is a magic link there.
        int hostRoot = Libc.openHost("/", OpenFlags.O_PATH | OpenFlags.O_DIRECTORY);
        try {
            assertThatThrownBy(() -> Libc.close(resolver.open(hostRoot, "/proc/self/root/etc", OpenFlags.O_PATH, false)))
                    .isInstanceOfSatisfying(ErrnoException.class, e -> assertThat(e.errno()).isEqualTo(Errno.ELOOP));
            assertThatThrownBy(() -> Libc.close(resolver.open(hostRoot, "/proc/self/cwd/x", OpenFlags.O_PATH, false)))
                    .isInstanceOfSatisfying(ErrnoException.class, e -> assertThat(e.errno()).isEqualTo(Errno.ELOOP));
            // /proc/self itself is an ordinary symlink, allowed by both.
            Libc.close(resolver.open(hostRoot, "/proc/self/status", OpenFlags.O_PATH, false));
        } finally {
            Libc.close(hostRoot);
        }
    }

    @Test
    void aBindMountOnTheWayIsRefusedOnlyWhenWriting() throws Exception {
        assumeTrue(Processes.isRoot(), "bind mounts need root; .ci/run runs the tests as root");
        Path target = Files.createDirectories(root.resolve("usr/local/nvidia/lib64"));
        Processes.check(List.of("mount", "--bind", outside.toString(), target.toString()));
        try {
            assertThat(errnoOf("/usr/local/nvidia/lib64", OpenFlags.O_RDONLY | OpenFlags.O_DIRECTORY, false)).isZero();
            assertThat(errnoOf("/usr/local/nvidia/lib64", OpenFlags.O_RDONLY | OpenFlags.O_DIRECTORY, true))
                    .isEqualTo(Errno.EXDEV);
            assertThat(errnoOf("/usr/local/nvidia/lib64/secret", OpenFlags.O_PATH, true)).isEqualTo(Errno.EXDEV);
            assertThat(errnoOf("/usr/lib/x86_64-linux-gnu", OpenFlags.O_RDONLY | OpenFlags.O_DIRECTORY, true)).isZero();
        } finally {
            Processes.check(List.of("umount", target.toString()));
        }
    }

    @Test
    void resolversOnlyOpenWithOPathOrODirectory() {
        assertThatThrownBy(() -> resolver.open(rootFd, "/usr", OpenFlags.O_RDONLY, false))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void hugePathsAreRefused() throws IOException {
        String longPath = "/a".repeat(3000);
        assertThat(errnoOf(longPath, OpenFlags.O_PATH, false)).isEqualTo(Errno.ENAMETOOLONG);
    }
}
