package io.driveralias.agent.testing;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * An OCI image archive (an image layout in a tar, as {@code ctr images import} takes it) of one
 * uncompressed layer: a root filesystem tar, an entry point, the machine's platform. No registry
 * and no Docker needed.
 */
final class OciArchive {

    private static final ObjectMapper JSON = new ObjectMapper();

    private OciArchive() {
    }

    /** Writes the archive of image {@code name} (e.g. {@code docker.io/daa-test/x:1}) to {@code archive}. */
    static Path write(Path rootTar, String name, List<String> command, Path archive) {
        return write(rootTar, name, List.of("PATH=/usr/bin:/bin:/sbin"), command, archive);
    }

    /** The same with the image's environment ({@code NAME=value}). */
    static Path write(Path rootTar, String name, List<String> env, List<String> command, Path archive) {
        try {
            Path layout = Files.createTempDirectory(archive.getParent(), "oci-");
            Files.createDirectories(layout.resolve("blobs/sha256"));
            Blob layer = blob(layout, rootTar);
            Map<String, Object> config = Map.of("architecture", architecture(), "os", "linux",
                    "config", Map.of("Env", env, "Cmd", command),
                    "rootfs", Map.of("type", "layers", "diff_ids", List.of(layer.digest())));
            Blob configBlob = blob(layout, JSON.writeValueAsBytes(config));
            Map<String, Object> manifest = Map.of("schemaVersion", 2, "mediaType", "application/vnd.oci.image.manifest.v1+json",
                    "config", Map.of("mediaType", "application/vnd.oci.image.config.v1+json", "digest", configBlob.digest(),
                            "size", configBlob.size()),
                    "layers", List.of(Map.of("mediaType", "application/vnd.oci.image.layer.v1.tar", "digest", layer.digest(),
                            "size", layer.size())));
            Blob manifestBlob = blob(layout, JSON.writeValueAsBytes(manifest));
            Map<String, Object> index = Map.of("schemaVersion", 2, "manifests", List.of(Map.of(
                    "mediaType", "application/vnd.oci.image.manifest.v1+json", "digest", manifestBlob.digest(),
                    "size", manifestBlob.size(),
                    "annotations", Map.of("io.containerd.image.name", name,
                            "org.opencontainers.image.ref.name", name.substring(name.lastIndexOf(':') + 1)))));
            Files.write(layout.resolve("index.json"), JSON.writeValueAsBytes(index));
            Files.writeString(layout.resolve("oci-layout"), "{\"imageLayoutVersion\":\"1.0.0\"}");
            Processes.check(List.of("tar", "-C", layout.toString(), "-cf", archive.toString(), "."));
            Processes.check(List.of("rm", "-rf", layout.toString()));
            return archive;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private record Blob(String digest, long size) {
    }

    private static Blob blob(Path layout, byte[] bytes) throws IOException {
        String digest = "sha256:" + HexFormat.of().formatHex(sha256().digest(bytes));
        Files.write(layout.resolve("blobs/sha256/" + digest.substring(7)), bytes);
        return new Blob(digest, bytes.length);
    }

    private static Blob blob(Path layout, Path file) throws IOException {
        MessageDigest sha = sha256();
        try (InputStream in = Files.newInputStream(file)) {
            byte[] buffer = new byte[1 << 16];
            for (int n = in.read(buffer); n > 0; n = in.read(buffer)) {
                sha.update(buffer, 0, n);
            }
        }
        String digest = "sha256:" + HexFormat.of().formatHex(sha.digest());
        Files.copy(file, layout.resolve("blobs/sha256/" + digest.substring(7)));
        return new Blob(digest, Files.size(file));
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    /** The OCI name of this machine's architecture, as containerd's import picks the platform. */
    private static String architecture() {
        String arch = System.getProperty("os.arch");
        return switch (arch) {
            case "amd64", "x86_64" -> "amd64";
            case "aarch64" -> "arm64";
            default -> arch;
        };
    }
}
