package io.driveralias.agent.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Each library's verdict against the node's module, and the container's: the worst, libcuda's first among equals. */
class DriverLoadTest {

    private static DriverLoad.Loaded loaded(String soname, DriverLoad.Source source, String version, List<Integer> branches) {
        Optional<DriverLoad.Compat> compat = source == DriverLoad.Source.COMPAT
                ? Optional.of(new DriverLoad.Compat("/usr/local/cuda/compat", Optional.empty(), branches, false)) : Optional.empty();
        return new DriverLoad.Loaded(soname, "/x/" + soname, source, Optional.ofNullable(version), compat, "its /etc/ld.so.cache");
    }

    private static DriverLoad.Verdict one(DriverLoad.Source source, String version, List<Integer> branches, String module) {
        return DriverLoad.verdict(loaded("libcuda.so.1", source, version, branches), Optional.ofNullable(module));
    }

    @Test
    void eachSourceAgainstTheModule() {
        assertThat(one(DriverLoad.Source.NODE, "535.104.05", List.of(), "535.104.05")).isEqualTo(DriverLoad.Verdict.NODE);
        assertThat(one(DriverLoad.Source.NODE, "535.183.01", List.of(), "535.104.05")).isEqualTo(DriverLoad.Verdict.NODE_MISMATCH);
        assertThat(one(DriverLoad.Source.IMAGE, "535.104.05", List.of(), "535.104.05")).as("a copy of the very version works")
                .isEqualTo(DriverLoad.Verdict.NODE);
        assertThat(one(DriverLoad.Source.IMAGE, null, List.of(), "535.104.05")).isEqualTo(DriverLoad.Verdict.IMAGE);
        assertThat(one(DriverLoad.Source.IMAGE, "470.57.02", List.of(), null)).as("nothing to judge against: a copy still")
                .isEqualTo(DriverLoad.Verdict.IMAGE);
        // Without NVIDIA's note: a newer branch only, as its hook decides.
        assertThat(one(DriverLoad.Source.COMPAT, "550.54.15", List.of(), "535.104.05")).isEqualTo(DriverLoad.Verdict.COMPAT);
        assertThat(one(DriverLoad.Source.COMPAT, "535.183.01", List.of(), "535.104.05"))
                .isEqualTo(DriverLoad.Verdict.COMPAT_UNSUPPORTED);
        assertThat(one(DriverLoad.Source.COMPAT, "535.104.05", List.of(), "535.104.05")).isEqualTo(DriverLoad.Verdict.COMPAT_OLDER);
        assertThat(one(DriverLoad.Source.COMPAT, "470.57.02", List.of(), "535.104.05")).isEqualTo(DriverLoad.Verdict.COMPAT_OLDER);
        // With it: the module's branch listed, and newer.
        assertThat(one(DriverLoad.Source.COMPAT, "575.57.08", List.of(535, 575), "535.104.05")).isEqualTo(DriverLoad.Verdict.COMPAT);
        assertThat(one(DriverLoad.Source.COMPAT, "575.57.08", List.of(550, 575), "535.104.05"))
                .isEqualTo(DriverLoad.Verdict.COMPAT_UNSUPPORTED);
        assertThat(one(DriverLoad.Source.NOT_FOUND, null, List.of(), "535.104.05")).isEqualTo(DriverLoad.Verdict.NONE);
    }

    @Test
    void theContainersVerdictIsItsWorstLibrarysLibcudaFirst() {
        DriverLoad load = DriverLoad.judge(List.of(loaded("libnvidia-ptxjitcompiler.so.1", DriverLoad.Source.IMAGE, "470.57.02",
                        List.of()), loaded("libnvidia-ml.so.1", DriverLoad.Source.NODE, "535.104.05", List.of()),
                loaded("libcuda.so.1", DriverLoad.Source.IMAGE, "470.57.02", List.of())), Optional.of("535.104.05"));

        assertThat(load.verdict()).isEqualTo(DriverLoad.Verdict.IMAGE);
        assertThat(load.principal().get().soname()).isEqualTo("libcuda.so.1");
        assertThat(load.libraries()).extracting(DriverLoad.Loaded::soname)
                .containsExactly("libcuda.so.1", "libnvidia-ml.so.1", "libnvidia-ptxjitcompiler.so.1");
        assertThat(DriverLoad.judge(List.of(), Optional.of("535.104.05")).verdict()).isEqualTo(DriverLoad.Verdict.NONE);
    }
}
