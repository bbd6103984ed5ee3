package io.driveralias.agent.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Which versions are a driver's: what decides whether an image's own link may be replaced. */
class FileNamesTest {

    @ParameterizedTest(name = "{0}: {1}")
    @CsvSource({
            "libcuda.so.535.104.05, true",
            "libnvidia-ml.so.550.54, true",
            "libcuda.so.470.199.02, true",
            "libcuda.so.304.137, true",
            "libz.so.1.2.13, false",
            "libstdc++.so.6.0.30, false",
            "libcuda.so.1.1, false",
            "libcuda.so.1, false",
            "libcudnn.so.8.9.7, false",
            "libnvidia-ml.so.053.104.05, false",
            "libcuda.so.535.104.05.1, false",
    })
    void driverVersions(String name, boolean driver) {
        assertThat(FileNames.hasDriverVersion(name)).isEqualTo(driver);
    }

    @Test
    void theVersionIsReadAsThePatternReadsIt() {
        List<String> parts = List.of("lib", "so", ".", ".so.", "1", "535", "104", "05", "cuda", "nvidia-ml", "c++", "_", "+", "-",
                "x", "A", "/", " ", "..", "\u00e9", "0", ".so", "so.", "lib.");
        Random random = new Random(18);
        for (int i = 0; i < 200_000; i++) {
            StringBuilder name = new StringBuilder(random.nextInt(4) == 0 ? "" : "lib");
            for (int n = random.nextInt(9); n > 0; n--) {
                name.append(parts.get(random.nextInt(parts.size())));
            }
            String text = name.toString();
            assertThat(FileNames.versionOf(text)).as(text).isEqualTo(FileNames.versionOfByPattern(text));
        }
        for (String name : List.of("libcuda.so.535.104.05", "libx.so.so.1.2", "libx..so.1.2", "lib.so.1.2", "libx.so.1", "libx.so.1.",
                "libx.so..1.2", "libnvidia-glvkspirv.so.550.54.15", "libstdc++.so.6.0.30", "libx.so.1.so.2.3", "libx.y.so.1.2")) {
            assertThat(FileNames.versionOf(name)).as(name).isEqualTo(FileNames.versionOfByPattern(name));
        }
    }
}
