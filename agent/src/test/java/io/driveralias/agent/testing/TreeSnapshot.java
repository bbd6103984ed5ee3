package io.driveralias.agent.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * Everything observable about a host directory tree: each path's type, mode, owner, mtime,
 * link text and content hash. Two equal snapshots mean nothing in the tree changed.
 */
public final class TreeSnapshot {

    private TreeSnapshot() {
    }

    public static Map<String, String> of(Path root) {
        Map<String, String> snapshot = new TreeMap<>();
        try (Stream<Path> paths = Files.walk(root)) {
            paths.forEach(p -> snapshot.put(root.relativize(p).toString(), describe(p)));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return snapshot;
    }

    private static String describe(Path p) {
        try {
            PosixFileAttributes a = Files.readAttributes(p, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            StringBuilder b = new StringBuilder();
            b.append(a.isSymbolicLink() ? "link" : a.isDirectory() ? "dir" : a.isRegularFile() ? "file" : "other")
                    .append(' ').append(a.permissions()).append(' ').append(a.owner().getName())
                    .append(' ').append(a.lastModifiedTime().toMillis());
            if (a.isSymbolicLink()) {
                b.append(" -> ").append(Files.readSymbolicLink(p));
            } else if (a.isRegularFile()) {
                MessageDigest sha = MessageDigest.getInstance("SHA-256");
                b.append(" sha256=").append(HexFormat.of().formatHex(sha.digest(Files.readAllBytes(p))));
            }
            return b.toString();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
