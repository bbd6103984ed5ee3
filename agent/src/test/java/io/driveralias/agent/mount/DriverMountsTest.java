package io.driveralias.agent.mount;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class DriverMountsTest {

    private static final String LIB = "/usr/lib/x86_64-linux-gnu";

    private static MountEntry mount(int id, String mountPoint) {
        return new MountEntry(id, 1, 259, 1, mountPoint, mountPoint, "ro", List.of(), "ext4", "/dev/x", "rw");
    }

    static Stream<Arguments> driverFileMountPoints() {
        return Stream.of(
                Arguments.of(LIB + "/libcuda.so.535.104.05", true),
                Arguments.of(LIB + "/libnvidia-ml.so.535.104.05", true),
                Arguments.of("/usr/lib64/libnvidia-gpucomp.so.550.54.15", true),
                Arguments.of("/libcuda.so.535.104.05", true),
                Arguments.of("/weird dir/libcuda.so.535.104.05", true),
                Arguments.of(LIB + "/libcuda.so.1", false),
                Arguments.of(LIB + "/libcuda.so", false),
                Arguments.of("/usr/bin/nvidia-smi", false),
                Arguments.of("/usr/lib/firmware/nvidia/535.104.05/gsp_ga10x.bin", false),
                Arguments.of("/usr/local/nvidia/lib64", false),
                Arguments.of("/dev/nvidia0", false),
                Arguments.of("/", false),
                Arguments.of("libcuda.so.535.104.05", false),
                Arguments.of("", false),
                Arguments.of(LIB + "/libcuda.so.535.104.05/", false),
                Arguments.of("/usr/lib/../lib/libcuda.so.535.104.05", false),
                Arguments.of("/usr/./lib/libcuda.so.535.104.05", false),
                Arguments.of("/usr//lib/libcuda.so.535.104.05", false),
                Arguments.of("/opt/libcuda.so.535.104.05 ", false),
                Arguments.of("/opt/libcuda.so.535.104.05\n/etc/ld.so.preload", false),
                Arguments.of("/opt/lib\ncuda.so.535.104.05", false),
                Arguments.of("/opt/libcuda.so.535.104.05\u00e9", false));
    }

    @ParameterizedTest
    @MethodSource("driverFileMountPoints")
    void driverFileIsAVersionedLibraryAtACleanAbsolutePath(String mountPoint, boolean isDriverFile) {
        List<MountEntry> found = DriverMounts.driverFiles(List.of(mount(1, mountPoint)));
        assertThat(!found.isEmpty()).isEqualTo(isDriverFile);
    }

    @Test
    void driverFilesOfADockerContainerAreExactlyTheBoundLibraries() throws Exception {
        List<MountEntry> mounts = Fixtures.parse(Fixtures.DOCKER_FILES);

        assertThat(DriverMounts.driverFiles(mounts)).extracting(MountEntry::mountPoint).containsExactly(
                LIB + "/libnvidia-ml.so.535.104.05",
                LIB + "/libcuda.so.535.104.05",
                LIB + "/libcudadebugger.so.535.104.05",
                LIB + "/libnvidia-opencl.so.535.104.05",
                LIB + "/libnvidia-ptxjitcompiler.so.535.104.05",
                LIB + "/libnvidia-allocator.so.535.104.05",
                LIB + "/libnvidia-pkcs11.so.535.104.05",
                LIB + "/libnvidia-nvvm.so.535.104.05");
    }

    @Test
    void driverFilesOnRhelLiveInUsrLib64() throws Exception {
        List<MountEntry> mounts = Fixtures.parse(Fixtures.RHEL);

        assertThat(DriverMounts.driverFiles(mounts)).hasSize(7)
                .allSatisfy(m -> assertThat(m.mountPoint()).startsWith("/usr/lib64/lib").contains(".so.550.54.15"));
    }

    @Test
    void aWholeDirectoryMountHasNoDriverFileMounts() throws Exception {
        assertThat(DriverMounts.driverFiles(Fixtures.parse(Fixtures.LIB64_DIRECTORY))).isEmpty();
        assertThat(DriverMounts.driverFiles(Fixtures.parse(Fixtures.REAL_VM))).isEmpty();
    }

    @Test
    void weirdMountPointsOnlyCountWhenTheBaseNameIsPlain() throws Exception {
        List<MountEntry> mounts = Fixtures.parse(Fixtures.WEIRD);

        assertThat(DriverMounts.driverFiles(mounts)).extracting(MountEntry::mountId).containsExactly(704, 707);
    }

    private static final List<MountEntry> TABLE = List.of(
            mount(1, "/"),
            mount(2, "/usr/local/nvidia/lib64"),
            mount(3, LIB + "/libcuda.so.535.104.05"),
            mount(4, "/usr/local/nvidia"),
            mount(5, "/usr/local/nvidia/lib64"),
            mount(6, "/usr/lib/"),
            mount(7, "/opt/../usr"),
            mount(8, "/weird dir"));

    static Stream<Arguments> coveringMounts() {
        return Stream.of(
                Arguments.of("/usr/local/nvidia/lib64", Optional.of(5)),
                Arguments.of("/usr/local/nvidia/lib64/sub", Optional.of(5)),
                Arguments.of("/usr/local/nvidia/lib64x", Optional.of(4)),
                Arguments.of("/usr/local/nvidia", Optional.of(4)),
                Arguments.of("/usr/local/nvidi", Optional.of(1)),
                Arguments.of("/usr/local", Optional.of(1)),
                Arguments.of(LIB, Optional.of(1)),
                Arguments.of(LIB + "/libcuda.so.535.104.05", Optional.of(3)),
                Arguments.of("/usr/lib", Optional.of(1)),
                Arguments.of("/usr", Optional.of(1)),
                Arguments.of("/weird dir/x", Optional.of(8)),
                Arguments.of("/", Optional.of(1)),
                Arguments.of("", Optional.empty()),
                Arguments.of("usr/local/nvidia/lib64", Optional.empty()),
                Arguments.of("/usr/local/nvidia/lib64/", Optional.empty()),
                Arguments.of("/usr/local/nvidia/../nvidia/lib64", Optional.empty()),
                Arguments.of("/usr/local//nvidia/lib64", Optional.empty()),
                Arguments.of("/usr/local/./nvidia/lib64", Optional.empty()));
    }

    @ParameterizedTest
    @MethodSource("coveringMounts")
    void coveringMountIsTheLongestPrefixOnComponentBoundariesLastOneWinning(
            String directory, Optional<Integer> expectedId) {
        assertThat(DriverMounts.coveringMount(TABLE, directory).map(MountEntry::mountId)).isEqualTo(expectedId);
    }

    @Test
    void withoutARootMountAnUncoveredDirectoryHasNoCoveringMount() {
        List<MountEntry> noRoot = List.of(mount(2, "/usr/local/nvidia/lib64"));
        assertThat(DriverMounts.coveringMount(noRoot, "/opt")).isEmpty();
        assertThat(DriverMounts.coveringMount(List.of(), "/")).isEmpty();
    }

    @Test
    void aBindMountedLibraryDirectoryIsItsOwnCoveringMount() throws Exception {
        List<MountEntry> mounts = Fixtures.parse(Fixtures.LIB64_DIRECTORY);

        MountEntry lib64 = DriverMounts.coveringMount(mounts, "/usr/local/nvidia/lib64").orElseThrow();
        assertThat(lib64.mountId()).isEqualTo(1473);
        assertThat(lib64.root()).isEqualTo("/home/kubernetes/bin/nvidia/lib64");
    }

    @Test
    void aLibraryDirectoryInsideTheImageIsCoveredByTheOverlayRoot() throws Exception {
        List<MountEntry> docker = Fixtures.parse(Fixtures.DOCKER_FILES);
        assertThat(DriverMounts.coveringMount(docker, LIB).orElseThrow().fsType()).isEqualTo("overlay");

        List<MountEntry> rhel = Fixtures.parse(Fixtures.RHEL);
        assertThat(DriverMounts.coveringMount(rhel, "/usr/lib64").orElseThrow().mountId()).isEqualTo(2871);

        List<MountEntry> weird = Fixtures.parse(Fixtures.WEIRD);
        assertThat(DriverMounts.coveringMount(weird, "/weird dir").orElseThrow().mountId()).isEqualTo(700);
    }

    @Test
    void aCleanAbsolutePathHasNoEmptyDotOrDotDotComponent() {
        for (String clean : List.of("/", "/a", "/a/b", "/.a", "/..a", "/a.", "/...", "/a/.b/c..", "/usr/lib/libcuda.so.535.104.05")) {
            assertThat(DriverMounts.isCleanAbsolute(clean)).as(clean).isTrue();
        }
        for (String unclean : List.of("", "a", "a/b", "/a/", "//", "//a", "/a//b", "/.", "/..", "/a/.", "/a/..", "/./a", "/../a",
                "/a/./b", "/a/../b")) {
            assertThat(DriverMounts.isCleanAbsolute(unclean)).as(unclean).isFalse();
        }
    }
}
