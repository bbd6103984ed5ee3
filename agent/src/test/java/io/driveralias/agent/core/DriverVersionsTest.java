package io.driveralias.agent.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class DriverVersionsTest {

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource(nullValues = "none", value = {
            "libcuda.so.535.104.05, 535.104.05",
            "libnvidia-ml.so.470.199.02, 470.199.02",
            "libGLX_nvidia.so.550.54.14, 550.54.14",
            "libnvidia-ptxjitcompiler.so.390.48, 390.48",
            "libcuda.so.1, none",
            "libcuda.so, none",
            "libcuda.so.535.104.05.bak, none",
            "libstdc++.so.6.0.30, 6.0.30",
            "../libcuda.so.535.104.05, none",
    })
    void versionOfAFileName(String name, String version) {
        assertThat(FileNames.versionOf(name)).isEqualTo(Optional.ofNullable(version));
    }

    @Test
    void anchorsDecideOverOtherVersionedLibraries() {
        List<String> names = List.of("libstdc++.so.6.0.30", "libssl.so.3.0.2", "libnvidia-ml.so.535.104.05",
                "libcuda.so.535.104.05", "libz.so.1.2.13", "libffi.so.8.1.2");

        assertThat(DriverVersions.detect(names)).contains("535.104.05");
    }

    @Test
    void withTwoDriversTheNewestWinsAVote() {
        List<String> names = List.of("libcuda.so.470.199.02", "libnvidia-ml.so.470.199.02",
                "libcuda.so.535.104.05", "libnvidia-ml.so.535.104.05");

        assertThat(DriverVersions.detect(names)).contains("535.104.05");
    }

    @Test
    void withoutAnchorsTheNvidiaLibrariesVote() {
        List<String> names = List.of("libnvidia-glcore.so.535.104.05", "libnvidia-tls.so.535.104.05",
                "libnvidia-glcore.so.525.60.13", "libssl.so.3.0.2");

        assertThat(DriverVersions.detect(names)).contains("535.104.05");
    }

    @Test
    void noDriverFilesNoVersion() {
        assertThat(DriverVersions.detect(List.of("libssl.so.3.0.2", "libz.so.1.2.13"))).isEmpty();
    }

    @Test
    void versionsCompareNumerically() {
        assertThat(DriverVersions.compareVersions("535.104.05", "535.54.03")).isPositive();
        assertThat(DriverVersions.compareVersions("470.199.02", "535.54.03")).isNegative();
        assertThat(DriverVersions.compareVersions("390.48", "390.48.1")).isNegative();
    }

    @ParameterizedTest
    @CsvSource({"libcuda.so.1, true", "'', false", "., false", "..,false", "a/b, false", "'a b', false",
            "libé.so, false"})
    void plainNames(String name, boolean plain) {
        assertThat(FileNames.isPlainName(name)).isEqualTo(plain);
    }

    @Test
    void hostDriverVersionFromProc() {
        assertThat(DriverVersions.fromProcVersion(
                "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
                        + "GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)\n")).contains("535.104.05");
        assertThat(DriverVersions.fromProcVersion(
                "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release Build  (dvs-builder@U16)\n"))
                .contains("550.54.14");
        assertThat(DriverVersions.fromProcVersion("garbage")).isEmpty();
    }

    @Test
    void theHostsVersionsPreferTheModulesAndTellEveryUserSpaceVersion() {
        List<String> names = List.of("libcuda.so.535.104.05", "libnvidia-ml.so.535.104.05", "libcuda.so.470.57.02",
                "libnvidia-glcore.so.535.104.05");

        assertThat(DriverVersions.onHost(names, Optional.empty(), Optional.of("535.104.05")).accepted())
                .containsExactly("535.104.05");
        assertThat(DriverVersions.onHost(names, Optional.empty(), Optional.of("550.54.15")))
                .as("the module's files are gone: what the host has is its driver")
                .isEqualTo(new DriverVersions.HostVersions(Set.of("535.104.05", "470.57.02"), Set.of("535.104.05", "470.57.02")));
        assertThat(DriverVersions.onHost(names, Optional.of("470.57.02"), Optional.of("535.104.05")).accepted())
                .as("--driver-version decides").containsExactly("470.57.02");
        assertThat(DriverVersions.onHost(List.of("libnvidia-glcore.so.535.104.05", "libnvidia-tls.so.535.104.05"),
                Optional.empty(), Optional.empty()).userSpace()).as("no anchor: the version most files share")
                .containsExactly("535.104.05");
    }
}
