package io.driveralias.agent.fs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.driveralias.agent.elf.ByteSource;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A new file written under a temporary name, read back, then created or swapped in; never left behind. */
class NewFileTest {

    @TempDir
    Path tmp;

    private RootFs root;
    private Directory dir;

    @BeforeEach
    void open() throws Exception {
        Files.createDirectories(tmp.resolve("etc"));
        root = RootFs.openHostDirectory(tmp.toString(), PathResolver.detect(false));
        dir = root.openDirectory("/etc", true);
    }

    @AfterEach
    void close() {
        dir.close();
        root.close();
    }

    private List<String> names() throws Exception {
        try (Stream<Path> names = Files.list(tmp.resolve("etc"))) {
            return names.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    @Test
    void createdWithItsModeAndOwnerAndReadableBeforeItIsPlaced() throws Exception {
        try (NewFile out = dir.newFile("cache")) {
            out.write(bytes("hello, world"), 5);
            byte[] back = new byte[5];
            out.readFully(0, back, 5);
            assertThat(back).isEqualTo(bytes("hello"));
            assertThat(names()).singleElement().asString().matches("\\.cache\\.driver-alias-[0-9a-f]+");

            out.create(0640, 1234, 5678);
        }
        Path placed = tmp.resolve("etc/cache");
        assertThat(Files.readString(placed)).isEqualTo("hello");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(placed))).isEqualTo("rw-r-----");
        assertThat(Files.getAttribute(placed, "unix:uid")).isEqualTo(1234);
        assertThat(Files.getAttribute(placed, "unix:gid")).isEqualTo(5678);
        assertThat(names()).containsExactly("cache");
    }

    @Test
    void createNeverReplacesAndUnplacedFilesAreRemoved() throws Exception {
        Files.writeString(tmp.resolve("etc/cache"), "theirs");
        try (NewFile out = dir.newFile("cache")) {
            out.write(bytes("ours"), 4);
            assertThatThrownBy(() -> out.create(0644, 0, 0))
                    .isInstanceOfSatisfying(ErrnoException.class, e -> assertThat(e.is(Errno.EEXIST)).isTrue());
        }
        try (NewFile abandoned = dir.newFile("cache")) {
            abandoned.write(bytes("never placed"), 12);
        }
        assertThat(Files.readString(tmp.resolve("etc/cache"))).isEqualTo("theirs");
        assertThat(names()).containsExactly("cache");
    }

    /**
     * What overlayfs does to a hard-linked lower file, played on a plain filesystem: the name
     * gets another inode with the same size, mtime and bytes. That is the file that was read.
     */
    @Test
    void aSameBytesCopyUnderTheNameIsReplacedADifferentOneIsPutBack() throws Exception {
        Path cache = Files.writeString(tmp.resolve("etc/cache"), "version 1");
        FileStat read = dir.statEntry("cache");
        try (ReadableFile original = dir.openFile("cache")) {
            copyUp(cache, "version 1");
            try (NewFile out = dir.newFile("cache")) {
                out.write(bytes("version 2"), 9);
                out.replace(read, original, 0644, 0, 0);
            }
        }
        assertThat(Files.readString(cache)).isEqualTo("version 2");
        assertThat(names()).containsExactly("cache");

        FileStat second = dir.statEntry("cache");
        try (ReadableFile original = dir.openFile("cache")) {
            copyUp(cache, "version X"); // same size and mtime, other bytes: someone else's
            try (NewFile out = dir.newFile("cache")) {
                out.write(bytes("version 3"), 9);
                assertThatThrownBy(() -> out.replace(second, original, 0644, 0, 0))
                        .isInstanceOfSatisfying(ErrnoException.class, e -> assertThat(e.is(Errno.EEXIST)).isTrue());
            }
        }
        assertThat(Files.readString(cache)).isEqualTo("version X");
        assertThat(names()).containsExactly("cache");
    }

    @Test
    void withoutTheOriginalAnotherInodeIsAlwaysSomeoneElses() throws Exception {
        Path cache = Files.writeString(tmp.resolve("etc/cache"), "version 1");
        FileStat read = dir.statEntry("cache");
        copyUp(cache, "version 1");
        try (NewFile out = dir.newFile("cache")) {
            out.write(bytes("version 2"), 9);
            assertThatThrownBy(() -> out.replace(read, (ByteSource) null, 0644, 0, 0)).isInstanceOf(ErrnoException.class);
        }
        assertThat(Files.readString(cache)).isEqualTo("version 1");
        assertThat(names()).containsExactly("cache");
    }

    @Test
    void onlyTheExactTemporaryNamesOfAFileAreItsLeftovers() {
        assertThat(RootFs.isTemporaryNameOf(RootFs.temporaryName("ld.so.cache"), "ld.so.cache")).isTrue();
        assertThat(RootFs.isTemporaryNameOf(".ld.so.cache.driver-alias-0", "ld.so.cache")).isTrue();
        assertThat(RootFs.isTemporaryNameOf(".ld.so.cache.driver-alias-", "ld.so.cache")).isFalse();
        assertThat(RootFs.isTemporaryNameOf(".ld.so.cache.driver-alias-ABC", "ld.so.cache")).isFalse();
        assertThat(RootFs.isTemporaryNameOf(".ld.so.cachex.driver-alias-1", "ld.so.cache")).isFalse();
        assertThat(RootFs.isTemporaryNameOf(".driver-alias-1", "ld.so.cache")).isFalse();
        String longName = "l".repeat(250);
        assertThat(RootFs.isTemporaryNameOf(RootFs.temporaryName(longName), longName)).isTrue();
    }

    /** Replaces {@code file} by a new inode with {@code content} and the old mtime, as a copy-up does. */
    private static void copyUp(Path file, String content) throws Exception {
        FileTime mtime = Files.getLastModifiedTime(file);
        Path copy = Files.writeString(file.resolveSibling("copy"), content);
        Files.setLastModifiedTime(copy, mtime);
        Files.move(copy, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }
}
