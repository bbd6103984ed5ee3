package io.driveralias.agent.docker;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Docker's data directory read for a created container, as the daemon lays it out. */
class LayerStoreTest {

    private static final String ID = "c0ffee".repeat(10) + "0123";
    private static final String CACHE = "9f".repeat(32);

    @TempDir
    Path root;

    private void layout(String mountId, String hostConfig) throws IOException {
        Path mounts = Files.createDirectories(root.resolve("image/overlay2/layerdb/mounts/" + ID));
        Files.writeString(mounts.resolve("mount-id"), mountId);
        Path container = Files.createDirectories(root.resolve("containers/" + ID));
        Files.writeString(container.resolve("hostconfig.json"), hostConfig);
    }

    @Test
    void theContainersLayerAndReadOnlyFlagAreRead() throws IOException {
        layout(CACHE, "{\"Binds\":[],\"ReadonlyRootfs\":true,\"Runtime\":\"runc\"}");

        assertThat(LayerStore.overlayPaths(root.toString(), ID)).contains(Map.of(
                "UpperDir", root + "/overlay2/" + CACHE + "/diff", "MergedDir", root + "/overlay2/" + CACHE + "/merged"));
        assertThat(LayerStore.hostConfig(root.toString(), ID).map(LayerStoreTest::text))
                .contains("{\"Binds\":[],\"ReadonlyRootfs\":true,\"Runtime\":\"runc\"}");
    }

    @Test
    void theImagesLayersComeFromOverlay2sLowerFileAndOnlyOfItsExactShape() throws IOException {
        layout(CACHE, "{\"ReadonlyRootfs\":false}");
        Path layer = Files.createDirectories(root.resolve("overlay2/" + CACHE));
        String a = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
        String b = "0123456789ABCDEFGHIJKLMNOP";
        Files.writeString(layer.resolve("lower"), "l/" + a + ":l/" + b);

        assertThat(LayerStore.overlayPaths(root.toString(), ID).orElseThrow())
                .containsEntry("LowerDir", root + "/overlay2/l/" + a + ":" + root + "/overlay2/l/" + b);

        for (String hostile : List.of("l/../../etc", "/etc:l/" + a, "l/" + a + ":", "l/" + a.toLowerCase())) {
            Files.writeString(layer.resolve("lower"), hostile);
            assertThat(LayerStore.overlayPaths(root.toString(), ID).orElseThrow()).as(hostile).doesNotContainKey("LowerDir");
        }
    }

    @Test
    void anythingUnexpectedIsUnknownNotGuessed() throws IOException {
        layout("../../etc", "{\"Binds\":[]}");

        assertThat(LayerStore.overlayPaths(root.toString(), ID)).as("a cache id that is a path").isEmpty();
        assertThat(LayerStore.containerConfig(root.toString(), ID)).as("no config.v2.json").isEmpty();
        assertThat(LayerStore.hostConfig(root.toString(), "../" + ID)).isEmpty();
        assertThat(LayerStore.overlayPaths(root.toString(), "../" + ID)).isEmpty();
        assertThat(LayerStore.overlayPaths(root.resolve("missing").toString(), ID)).isEmpty();
    }

    @Test
    void aSymlinkInPlaceOfTheFileIsNotFollowed() throws IOException {
        layout(CACHE, "{\"ReadonlyRootfs\":false}");
        Path elsewhere = Files.writeString(root.resolve("elsewhere"), CACHE.replace('9', '8'));
        Path file = root.resolve("image/overlay2/layerdb/mounts/" + ID + "/mount-id");
        Files.delete(file);
        Files.createSymbolicLink(file, elsewhere);

        assertThat(LayerStore.overlayPaths(root.toString(), ID)).isEmpty();
        Path hostConfig = root.resolve("containers/" + ID + "/hostconfig.json");
        Files.delete(hostConfig);
        Files.createSymbolicLink(hostConfig, elsewhere);
        assertThat(LayerStore.hostConfig(root.toString(), ID)).isEmpty();
    }

    /** A file of megabytes (its owner's environment) is streamed, never read whole, and the GPU variables found in it. */
    @Test
    void aContainerFileOfMegabytesIsStreamed() throws IOException {
        layout(CACHE, "{}");
        Files.writeString(root.resolve("containers/" + ID + "/config.v2.json"),
                "{\"Config\":{\"Env\":[\"A=" + "x".repeat(8 << 20) + "\",\"NVIDIA_VISIBLE_DEVICES=all\"]}}");
        try (java.io.InputStream in = LayerStore.containerConfig(root.toString(), ID).orElseThrow();
             com.fasterxml.jackson.core.JsonParser p = JsonReading.parser(in)) {
            assertThat(ContainerInspectParser.configEnvironment(p)).containsExactly("NVIDIA_VISIBLE_DEVICES=all");
        }
        assertThat(LayerStore.hostConfig(root.toString(), ID).map(LayerStoreTest::text)).contains("{}");
    }

    @Test
    void aFifoInPlaceOfAContainerFileIsNotOpened() throws Exception {
        layout(CACHE, "{}");
        new ProcessBuilder("mkfifo", root.resolve("containers/" + ID + "/config.v2.json").toString()).start().waitFor();
        assertThat(LayerStore.containerConfig(root.toString(), ID)).isEmpty();
    }

    private static String text(java.io.InputStream in) {
        try (in) {
            return new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
