package io.driveralias.agent.overlay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.driveralias.agent.fs.FileStat;
import io.driveralias.agent.fs.Libc;
import io.driveralias.agent.fs.NativeIo;
import io.driveralias.agent.fs.OpenFlags;
import io.driveralias.agent.fs.PathResolver;
import io.driveralias.agent.fs.RootFs;
import io.driveralias.agent.testing.Processes;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The wait for a container's root, against real mounts: the merged directory made and the
 * overlay mounted while the agent waits, as Docker does at a start; and every other mount at
 * that place refused.
 */
class MountedRootMountTest {

    private static final Duration PATIENCE = Duration.ofSeconds(5);

    @TempDir
    Path tmp;

    private Path layer;
    private Path merged;
    private final List<Path> mounted = new ArrayList<>();

    @BeforeEach
    void layout() throws Exception {
        assumeTrue(Processes.isRoot(), "mounts need root");
        Path lower = Files.createDirectories(tmp.resolve("image/diff/usr/lib64"));
        Files.writeString(lower.resolve("libc.so.6"), "lower");
        // Docker's layout: <overlay2>/<layer>/{diff,work,merged}, merged made at the start.
        layer = Files.createDirectories(tmp.resolve("overlay2/abc"));
        Files.createDirectories(layer.resolve("diff"));
        Files.createDirectories(layer.resolve("work"));
        merged = layer.resolve("merged");
    }

    @AfterEach
    void unmount() {
        for (Path p : mounted.reversed()) {
            Processes.run(List.of("umount", "-l", p.toString()));
        }
    }

    private void mountOverlay(Path at, Path upper) {
        Processes.check(List.of("mount", "-t", "overlay", "overlay", "-o", "lowerdir=" + tmp.resolve("image/diff")
                + ",upperdir=" + upper + ",workdir=" + upper.resolveSibling("work"), at.toString()));
        mounted.add(at);
    }

    private void mountTmpfs(Path at) {
        Processes.check(List.of("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", at.toString()));
        mounted.add(at);
    }

    private Optional<RootFs> await(Duration patience) throws Exception {
        return MountedRoot.await(merged.toString(), layer.resolve("diff").toString(), patience, PathResolver.detect(false));
    }

    private static CompletableFuture<Void> later(ThrowingRunnable action) {
        return CompletableFuture.runAsync(() -> {
            try {
                Thread.sleep(150);
                action.run();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
    }

    @FunctionalInterface
    private interface ThrowingRunnable {
        void run() throws Exception;
    }

    @Test
    void theMergedDirectoryIsSeenWhenDockerMakesIt() throws Exception {
        CompletableFuture<Void> start = later(() -> Files.createDirectory(merged));
        long began = System.nanoTime();

        assertThat(MountedRoot.awaitStarting(merged.toString(), PATIENCE)).isTrue();
        assertThat(System.nanoTime() - began).isLessThan(PATIENCE.toNanos());
        start.join();
    }

    @Test
    void aMergedDirectoryThatNeverComesIsAnAnswerAtTheDeadline() {
        long began = System.nanoTime();

        assertThat(MountedRoot.awaitStarting(merged.toString(), Duration.ofMillis(300))).isFalse();
        assertThat(System.nanoTime() - began).isGreaterThanOrEqualTo(Duration.ofMillis(300).toNanos());
        assertThat(MountedRoot.awaitStarting(tmp.resolve("no-layer/merged").toString(), Duration.ofMillis(100)))
                .as("a layer directory that is gone").isFalse();
    }

    @Test
    void theContainersOverlayIsTakenOnceMounted() throws Exception {
        Files.createDirectory(merged);
        CompletableFuture<Void> start = later(() -> mountOverlay(merged, layer.resolve("diff")));
        long began = System.nanoTime();

        Optional<RootFs> root = await(PATIENCE);
        start.join();

        assertThat(root).isPresent();
        assertThat(System.nanoTime() - began).isLessThan(PATIENCE.toNanos());
        try (RootFs fs = root.get()) {
            assertThat(fs.stat("/usr/lib64/libc.so.6", false).isRegularFile()).isTrue();
        }
    }

    @Test
    void anythingElseMountedThereIsRefused() throws Exception {
        Files.createDirectory(merged);
        mountTmpfs(merged);
        assertThat(await(PATIENCE)).as("a tmpfs").isEmpty();
        Processes.check(List.of("umount", merged.toString()));
        mounted.clear();

        Path other = Files.createDirectories(tmp.resolve("overlay2/other/diff"));
        Files.createDirectories(other.resolveSibling("work"));
        mountOverlay(merged, other);
        assertThat(await(PATIENCE)).as("another container's layer").isEmpty();
    }

    @Test
    void aMountThatNeverComesIsAnAnswerAtTheDeadline() throws Exception {
        Files.createDirectory(merged);
        long began = System.nanoTime();

        assertThat(await(Duration.ofMillis(300))).isEmpty();
        assertThat(System.nanoTime() - began).isGreaterThanOrEqualTo(Duration.ofMillis(300).toNanos());
    }

    @Test
    void theKernelSaysWhenTheMountTableChanges() throws Exception {
        Path point = Files.createDirectory(tmp.resolve("point"));
        int table = Libc.openHost("/proc/self/mountinfo", OpenFlags.O_RDONLY);
        try {
            mountTmpfs(point);
            int events = NativeIo.poll(table, NativeIo.POLLPRI, 5000);
            assertThat(events & NativeIo.POLLPRI).as("POLLPRI after a mount").isNotZero();

            int dir = Libc.openHost(point.toString(), OpenFlags.O_PATH | OpenFlags.O_DIRECTORY);
            FileStat stat = Libc.statx(dir, "", false);
            Libc.close(dir);
            Optional<byte[]> line = NativeIo.findLine(table, (stat.mountId() + " ").getBytes(StandardCharsets.US_ASCII),
                    64 << 10, 4 << 20);
            assertThat(line).map(b -> new String(b, StandardCharsets.ISO_8859_1))
                    .hasValueSatisfying(l -> assertThat(l).startsWith(stat.mountId() + " ").contains(" " + point + " ")
                            .contains(" - tmpfs "));
        } finally {
            Libc.close(table);
        }
    }

    @Test
    void inotifySaysWhenADirectoryIsMade() throws Exception {
        int inotify = NativeIo.inotifyInit();
        try {
            NativeIo.inotifyWatch(inotify, layer.toString(), NativeIo.IN_CREATE | NativeIo.IN_ONLYDIR);
            assertThat(NativeIo.poll(inotify, NativeIo.POLLIN, 0)).isZero();
            Files.createDirectory(merged);
            assertThat(NativeIo.poll(inotify, NativeIo.POLLIN, 5000) & NativeIo.POLLIN).isNotZero();
            NativeIo.drain(inotify);
            assertThat(NativeIo.poll(inotify, NativeIo.POLLIN, 0)).as("drained").isZero();
        } finally {
            Libc.close(inotify);
        }
    }
}
