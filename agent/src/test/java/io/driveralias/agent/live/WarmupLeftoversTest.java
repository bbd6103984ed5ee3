package io.driveralias.agent.live;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.fs.Libc;
import io.driveralias.agent.fs.OpenFlags;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue: on a host install the warm-up walked {@code /tmp/driver-alias-warmup-*} and deleted by
 * path; a local user who swapped a subdirectory for a symlink in between got root to delete a
 * file in a root-only directory. The agent runs as root here, as it does on a node.
 */
class WarmupLeftoversTest {

    private static final int NOBODY = 65534;

    @TempDir
    Path tmp;
    private Path secret;

    @BeforeEach
    void protectedFile() throws IOException {
        Path protectedDir = Files.createTempDirectory("daa-root-only-",
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        secret = Files.writeString(protectedDir.resolve("secret"), "root only");
    }

    @AfterEach
    void removeProtected() throws IOException {
        Files.deleteIfExists(secret);
        Files.deleteIfExists(secret.getParent());
    }

    @Test
    void aLeftoverOfAnotherUserIsNeverEnteredNorRemoved() throws Exception {
        Path planted = Files.createDirectory(tmp.resolve("driver-alias-warmup-planted"));
        Files.createSymbolicLink(planted.resolve("usr"), secret.getParent());
        Path sub = Files.createDirectories(planted.resolve("etc/x"));
        Files.writeString(sub.resolve("f"), "theirs");
        chownTree(planted, NOBODY);

        Warmup.removeLeftovers(tmp);

        assertThat(secret).hasContent("root only");
        assertThat(planted.resolve("etc/x/f")).as("not the agent's to remove").exists();
        assertThat(Files.isSymbolicLink(planted.resolve("usr"))).isTrue();
    }

    @Test
    void anOwnLeftoverIsRemovedWithoutFollowingASymlinkInIt() throws Exception {
        Path own = Files.createDirectory(tmp.resolve("driver-alias-warmup-123"));
        Files.createDirectories(own.resolve("usr/lib64"));
        Files.writeString(own.resolve("usr/lib64/libjsig.so.1.0.0"), "elf");
        Files.createSymbolicLink(own.resolve("usr/lib64/libjsig.so"), secret);
        Files.createSymbolicLink(own.resolve("etc"), secret.getParent());
        Path file = Files.writeString(tmp.resolve("driver-alias-warmup-file"), "a file, not a warm-up root");
        Files.createSymbolicLink(tmp.resolve("driver-alias-warmup-link"), secret.getParent());

        Warmup.removeLeftovers(tmp);

        assertThat(own).doesNotExist();
        assertThat(secret).hasContent("root only");
        assertThat(file).as("only directories are leftovers").exists();
        assertThat(Files.isSymbolicLink(tmp.resolve("driver-alias-warmup-link"))).isTrue();
    }

    /**
     * The race itself: while the leftovers are removed, another thread keeps exchanging a
     * subdirectory (holding a file named like the protected one) with a symlink to the protected
     * directory. Removal by path deletes the protected file within a few rounds.
     */
    @Test
    void aSubdirectorySwappedForASymlinkDuringTheRemovalNeverLeadsOut() throws Exception {
        for (int round = 0; round < 300; round++) {
            Path leftover = Files.createDirectory(tmp.resolve("driver-alias-warmup-" + round));
            Path real = Files.createDirectory(leftover.resolve("usr"));
            for (int i = 0; i < 20; i++) {
                Files.writeString(real.resolve("pad" + i), "x");
            }
            Files.writeString(real.resolve("secret"), "decoy");
            Files.createSymbolicLink(leftover.resolve("swap"), secret.getParent());
            AtomicBoolean stop = new AtomicBoolean();
            Thread swapper = Thread.ofPlatform().start(() -> swapUntil(leftover, stop));
            try {
                Warmup.removeLeftovers(tmp);
            } finally {
                stop.set(true);
                swapper.join();
            }
            assertThat(secret).as("round %d", round).hasContent("root only");
            deleteTree(leftover);
        }
    }

    /** Another agent on the same host (alive: its pid runs, with the same start) keeps its warm-up root. */
    @Test
    void aLivingAgentsRootIsLeftAloneADeadOnesRemoved() throws Exception {
        Path living = Warmup.privateRoot(tmp);
        Path dead = Files.createDirectory(tmp.resolve("driver-alias-warmup-" + ProcessHandle.current().pid() + "-1-abc"));
        Path gone = Files.createDirectory(tmp.resolve("driver-alias-warmup-999999999-5-abc"));
        try {
            Warmup.removeLeftovers(tmp);
            assertThat(living).as("this process's own, alive").isDirectory();
            assertThat(dead).as("the same pid with another start: a process that ended").doesNotExist();
            assertThat(gone).as("no such process").doesNotExist();
        } finally {
            Files.deleteIfExists(living);
        }
    }

    @Test
    void theWarmUpRootIsPrivate() throws Exception {
        Path root = Warmup.privateRoot(tmp);
        try {
            assertThat(Files.getPosixFilePermissions(root, LinkOption.NOFOLLOW_LINKS))
                    .isEqualTo(PosixFilePermissions.fromString("rwx------"));
            assertThat(Files.getAttribute(root, "unix:uid", LinkOption.NOFOLLOW_LINKS)).isEqualTo(Libc.geteuid());
        } finally {
            Files.deleteIfExists(root);
        }
    }

    /** Exchanges {@code usr} and {@code swap} (a directory and a symlink) as fast as it can. */
    private static void swapUntil(Path leftover, AtomicBoolean stop) {
        int fd;
        try {
            fd = Libc.openHost(leftover.toString(), OpenFlags.O_PATH | OpenFlags.O_DIRECTORY);
        } catch (ErrnoException e) {
            return;
        }
        try {
            while (!stop.get()) {
                Libc.renameat2(fd, "usr", "swap", OpenFlags.RENAME_EXCHANGE);
            }
        } catch (ErrnoException gone) {
            // the remover took one of them: nothing left to swap
        } finally {
            Libc.close(fd);
        }
    }

    private static void chownTree(Path root, int uid) throws IOException {
        try (var paths = Files.walk(root)) {
            for (Path p : paths.toList()) {
                Files.setAttribute(p, "unix:uid", uid, LinkOption.NOFOLLOW_LINKS);
            }
        }
    }

    private static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (var paths = Files.walk(root)) {
            for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }
}
