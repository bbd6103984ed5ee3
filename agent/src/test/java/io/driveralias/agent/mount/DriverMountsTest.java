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

    private static MountEntry bind(int major, int minor, String source, String mountPoint, String fsType) {
        return new MountEntry(9, 1, major, minor, source, mountPoint, "ro", List.of(), fsType, "/dev/x", "rw");
    }

    private static final MountEntry OVERLAY_ROOT = new MountEntry(1, 0, 0, 52, "/", "/", "rw", List.of(), "overlay",
            "overlay", "rw");

    @Test
    void everyDriverFileOfRealRuntimeLayoutsComesFromTheHost() throws Exception {
        for (String fixture : List.of(Fixtures.DOCKER_FILES, Fixtures.RHEL)) {
            List<MountEntry> mounts = Fixtures.parse(fixture);
            assertThat(DriverMounts.hostDriverFiles(mounts)).as(fixture)
                    .isNotEmpty().isEqualTo(DriverMounts.driverFiles(mounts));
        }
    }

    static Stream<Arguments> learnableMounts() {
        return Stream.of(
                Arguments.of("the runtime's bind of a host library", bind(259, 1, LIB + "/libcuda.so.535.104.05",
                        LIB + "/libcuda.so.535.104.05", "ext4"), true),
                Arguments.of("a GPU Operator driver root", bind(259, 1,
                        "/run/nvidia/driver/usr/lib64/libcuda.so.535.104.05", "/usr/lib64/libcuda.so.535.104.05",
                        "xfs"), true),
                Arguments.of("Debian's driver packages", bind(259, 1, LIB + "/nvidia/current/libcuda.so.535.104.05",
                        LIB + "/libcuda.so.535.104.05", "ext4"), true),
                Arguments.of("Debian's Tesla driver packages", bind(259, 1,
                        LIB + "/nvidia/tesla-535/libcuda.so.535.104.05", LIB + "/libcuda.so.535.104.05", "ext4"), true),
                Arguments.of("a directory further under a library directory", bind(259, 1,
                        "/var/lib/docker/volumes/v/_data/libcuda.so.535.104.05", LIB + "/libcuda.so.535.104.05",
                        "ext4"), false),
                Arguments.of("/usr on its own filesystem", bind(8, 2, "/lib/x86_64-linux-gnu/libcuda.so.535.104.05",
                        LIB + "/libcuda.so.535.104.05", "ext4"), true),
                Arguments.of("mounted by the container from its own root", bind(0, 52, "/tmp/evil.so",
                        LIB + "/libcuda.so.535.104.05", "overlay"), false),
                Arguments.of("from its own root, even at a library path", bind(0, 52, LIB + "/libcuda.so.535.104.05",
                        LIB + "/libcuda.so.535.104.05", "overlay"), false),
                Arguments.of("a host file under another name", bind(259, 1, LIB + "/libc.so.6",
                        LIB + "/libcuda.so.535.104.05", "ext4"), false),
                Arguments.of("a host file outside any library directory", bind(259, 1,
                        "/home/user/libcuda.so.535.104.05", LIB + "/libcuda.so.535.104.05", "ext4"), false),
                Arguments.of("a source path that is not clean", bind(259, 1, "/usr/lib/../../tmp/lib/libcuda.so.535.104.05",
                        LIB + "/libcuda.so.535.104.05", "ext4"), false));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("learnableMounts")
    void onlyFilesFromAHostLibraryDirectoryTeachSonames(String description, MountEntry driverMount, boolean learnable) {
        List<MountEntry> found = DriverMounts.hostDriverFiles(List.of(OVERLAY_ROOT, driverMount));
        assertThat(!found.isEmpty()).isEqualTo(learnable);
    }
}
