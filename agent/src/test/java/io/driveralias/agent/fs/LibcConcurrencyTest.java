package io.driveralias.agent.fs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The native buffers behind {@link Libc} and {@link NativeIo} are lent out per call: many
 * threads, virtual and platform, more of them than the pool holds, each working on its own
 * names at once, must each see exactly their own answers.
 */
class LibcConcurrencyTest {

    @TempDir
    Path tmp;

    @Test
    void manyThreadsAtOnceEachGetTheirOwnAnswers() throws Exception {
        int platform = 8;
        int virtual = 56;
        CountDownLatch start = new CountDownLatch(1);
        ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < platform + virtual; t++) {
            Path dir = Files.createDirectories(tmp.resolve("t" + t));
            int id = t;
            Runnable work = () -> {
                try {
                    start.await();
                    exercise(dir, id);
                } catch (Throwable e) {
                    failures.add(e);
                }
            };
            threads.add(t < platform ? Thread.ofPlatform().start(work) : Thread.ofVirtual().start(work));
        }
        start.countDown();
        for (Thread t : threads) {
            t.join();
        }
        assertThat(failures).isEmpty();
    }

    /** Links, renames, stats, lists and reads with names of this thread's own, of every length up to a long one. */
    private static void exercise(Path dir, int id) throws Exception {
        byte[] content = ("content of thread " + id + "\n").repeat(5000).getBytes(StandardCharsets.ISO_8859_1);
        Files.write(dir.resolve("data"), content);
        int dirFd = Libc.openHost(dir.toString(), OpenFlags.O_RDONLY | OpenFlags.O_DIRECTORY);
        try {
            for (int round = 0; round < 200; round++) {
                String name = ("n" + id + "-" + round + "-").repeat(1 + ThreadLocalRandom.current().nextInt(12));
                String target = "target-of-" + id + "-" + round + "-" + "\u00e9\u00ff".repeat(round % 50);
                Libc.symlinkat(target, dirFd, name);
                assertThat(Libc.readlinkat(dirFd, name)).isEqualTo(target);
                Libc.renameat2(dirFd, name, name + ".moved", OpenFlags.RENAME_NOREPLACE);
                FileStat link = Libc.statx(dirFd, name + ".moved", false);
                assertThat(link.isSymlink()).isTrue();
                assertThat(link.size()).isEqualTo(target.length());
                // A fresh fd: getdents64 reads on from where the last listing ended.
                int listFd = Libc.openat(dirFd, ".", OpenFlags.O_RDONLY | OpenFlags.O_DIRECTORY);
                try {
                    assertThat(NativeIo.readDirectory(listFd, 1000)).extracting(Libc.RawDirent::name)
                            .containsExactlyInAnyOrder("data", name + ".moved");
                } finally {
                    Libc.close(listFd);
                }
                Libc.unlinkat(dirFd, name + ".moved", 0);

                int fd = Libc.openat(dirFd, "data", OpenFlags.O_RDONLY | OpenFlags.O_NOFOLLOW);
                try {
                    byte[] read = new byte[content.length];
                    int done = 0;
                    for (int n; done < read.length && (n = NativeIo.pread(fd, read, done, read.length - done, done)) > 0; ) {
                        done += n;
                    }
                    assertThat(done).isEqualTo(content.length);
                    assertThat(read).isEqualTo(content);
                } finally {
                    Libc.close(fd);
                }
            }
        } finally {
            Libc.close(dirFd);
        }
    }

    @Test
    void namesAreCheckedBeforeAnyCall(@TempDir Path dir) throws Exception {
        int dirFd = Libc.openHost(dir.toString(), OpenFlags.O_PATH | OpenFlags.O_DIRECTORY);
        try {
            assertThatThrownBy(() -> Libc.statx(dirFd, "a\0b", false)).isInstanceOf(ErrnoException.class)
                    .satisfies(e -> assertThat(((ErrnoException) e).errno()).isEqualTo(Errno.EINVAL));
            assertThatThrownBy(() -> Libc.statx(dirFd, "\u20ac", false)).as("not a byte")
                    .satisfies(e -> assertThat(((ErrnoException) e).errno()).isEqualTo(Errno.EINVAL));
            assertThatThrownBy(() -> Libc.openat2(dirFd, "a/".repeat(2048), OpenFlags.O_PATH, OpenFlags.RESOLVE_IN_ROOT))
                    .satisfies(e -> assertThat(((ErrnoException) e).errno()).isEqualTo(Errno.ENAMETOOLONG));
            String longest = "d/".repeat(2047) + "x";
            assertThatThrownBy(() -> Libc.openat(dirFd, longest, OpenFlags.O_PATH)).as("4095 bytes reach the kernel")
                    .satisfies(e -> assertThat(((ErrnoException) e).errno()).isEqualTo(Errno.ENOENT));
        } finally {
            Libc.close(dirFd);
        }
        Path utf8 = Files.createDirectories(dir.resolve("r\u00e9pertoire-\u20ac"));
        Libc.close(Libc.openHost(utf8.toString(), OpenFlags.O_PATH | OpenFlags.O_DIRECTORY));
    }
}
