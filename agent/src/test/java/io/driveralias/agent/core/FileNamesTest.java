package io.driveralias.agent.core;

import static org.assertj.core.api.Assertions.assertThat;

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
}
