package io.driveralias.agent.mount;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.FieldSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Real-world mountinfo files and the overall line shape. */
class MountInfoParserTest {

    private static final String LIB = "/usr/lib/x86_64-linux-gnu";
    private static final String NVME = "/dev/nvme0n1p1";
    private static final String EXT4_OPTIONS = "rw,discard,errors=remount-ro";

    /** A line whose mount point (escaped as the kernel would) is the only variable part. */
    static String lineWithMountPoint(String escapedMountPoint) {
        return "36 35 98:0 /mnt1 " + escapedMountPoint + " rw,noatime master:1 - ext3 /dev/root rw,errors=continue";
    }


    @ParameterizedTest
    @FieldSource("io.driveralias.agent.mount.Fixtures#ALL")
    void everyFixtureParsesOneEntryPerLine(String name) throws Exception {
        long lines = Fixtures.text(name).lines().count();
        assertThat(Fixtures.parse(name)).hasSize((int) lines);
    }

    @Test
    void oneLinePickedOutOfATableParsesAsInTheTable() throws Exception {
        List<MountEntry> mounts = Fixtures.parse(Fixtures.DOCKER_FILES);
        String line = Fixtures.text(Fixtures.DOCKER_FILES).lines().toList().get(1);

        assertThat(MountInfoParser.parseLine(line)).isEqualTo(mounts.get(1));
        assertThatThrownBy(() -> MountInfoParser.parseLine(line + "\n" + line)).isInstanceOf(MountInfoException.class);
        assertThatThrownBy(() -> MountInfoParser.parseLine("612 590 259:1")).isInstanceOf(MountInfoException.class);
    }

    @Test
    void dockerOverlayWithDriverFilesBoundOneByOne() throws Exception {
        List<MountEntry> mounts = Fixtures.parse(Fixtures.DOCKER_FILES);

        MountEntry root = mounts.getFirst();
        assertThat(root.mountId()).isEqualTo(590);
        assertThat(root.parentId()).isEqualTo(452);
        assertThat(root.major()).isZero();
        assertThat(root.minor()).isEqualTo(52);
        assertThat(root.root()).isEqualTo("/");
        assertThat(root.mountPoint()).isEqualTo("/");
        assertThat(root.options()).isEqualTo("rw,relatime");
        assertThat(root.optionalFields()).containsExactly("master:280");
        assertThat(root.fsType()).isEqualTo("overlay");
        assertThat(root.source()).isEqualTo("overlay");
        assertThat(root.superOptions())
                .startsWith("rw,lowerdir=/var/lib/docker/overlay2/l/QZ3K7XG4HPN2YJ6TFB5WLD2RAM:")
                .contains(",upperdir=/var/lib/docker/overlay2/", "/diff,workdir=")
                .endsWith("/work");

        assertThat(Fixtures.byId(mounts, 612)).isEqualTo(new MountEntry(612, 590, 259, 1,
                LIB + "/libcuda.so.535.104.05", LIB + "/libcuda.so.535.104.05",
                "ro,nosuid,nodev,relatime", List.of("master:1"), "ext4", NVME, EXT4_OPTIONS));

        assertThat(Fixtures.byId(mounts, 625)).isEqualTo(new MountEntry(625, 592, 0, 5,
                "/nvidia0", "/dev/nvidia0", "ro,nosuid,noexec", List.of("master:2"),
                "devtmpfs", "udev", "rw,size=32860724k,nr_inodes=8215181,mode=755,inode64"));

        assertThat(Fixtures.byId(mounts, 626)).isEqualTo(new MountEntry(626, 591, 0, 62,
                "/", "/proc/driver/nvidia", "rw,nosuid,nodev,noexec,relatime", List.of(),
                "tmpfs", "tmpfs", "rw,mode=555,inode64"));

        MountEntry cgroup = Fixtures.byId(mounts, 597);
        assertThat(cgroup.root()).startsWith("/docker/9b2f4c1e");
        assertThat(cgroup.mountPoint()).isEqualTo("/sys/fs/cgroup/cpu,cpuacct");
        assertThat(cgroup.superOptions()).isEqualTo("rw,cpu,cpuacct");

        MountEntry hosts = Fixtures.byId(mounts, 605);
        assertThat(hosts.root()).startsWith("/var/lib/docker/containers/").endsWith("/hosts");
        assertThat(hosts.mountPoint()).isEqualTo("/etc/hosts");
        assertThat(hosts.optionalFields()).isEmpty();

        assertThat(Fixtures.byId(mounts, 606).mountPoint()).isEqualTo("/usr/bin/nvidia-smi");
        assertThat(mounts.getLast().mountPoint()).isEqualTo("/sys/firmware");
    }

    @Test
    void driverAsOneDirectoryMount() throws Exception {
        List<MountEntry> mounts = Fixtures.parse(Fixtures.LIB64_DIRECTORY);

        assertThat(Fixtures.byId(mounts, 1473)).isEqualTo(new MountEntry(1473, 1461, 8, 1,
                "/home/kubernetes/bin/nvidia/lib64", "/usr/local/nvidia/lib64",
                "ro,nosuid,nodev,relatime", List.of(), "ext4", "/dev/sda1", "rw,commit=30"));
        assertThat(Fixtures.byId(mounts, 1466).fsType()).isEqualTo("cgroup2");
        assertThat(Fixtures.byId(mounts, 1466).source()).isEqualTo("cgroup");
    }

    @Test
    void rhelWithUsrLib64AndSelinuxLabels() throws Exception {
        List<MountEntry> mounts = Fixtures.parse(Fixtures.RHEL);

        assertThat(Fixtures.byId(mounts, 2884)).isEqualTo(new MountEntry(2884, 2871, 253, 0,
                "/usr/lib64/libcuda.so.550.54.15", "/usr/lib64/libcuda.so.550.54.15",
                "ro,nosuid,nodev,relatime", List.of("master:1"), "xfs", "/dev/mapper/rhel-root",
                "rw,seclabel,attr2,inode64,logbufs=8,logbsize=32k,noquota"));
        // The SELinux label's quotes and comma stay in the option text untouched.
        assertThat(mounts.getFirst().superOptions())
                .startsWith("rw,context=\"system_u:object_r:container_file_t:s0:c171,c555\",lowerdir=");
    }

    @Test
    void weirdMountPointsAreUnescapedToTheirBytes() throws Exception {
        List<MountEntry> mounts = Fixtures.parse(Fixtures.WEIRD);

        assertThat(Fixtures.byId(mounts, 702).root()).isEqualTo("/srv/data set");
        assertThat(Fixtures.byId(mounts, 702).mountPoint()).isEqualTo("/mnt/data set");
        assertThat(Fixtures.byId(mounts, 703).mountPoint()).isEqualTo("/mnt/tab\tnewline\nback\\slash");
        assertThat(Fixtures.byId(mounts, 704)).isEqualTo(new MountEntry(704, 700, 259, 1,
                LIB + "/libcuda.so.535.104.05", "/weird dir/libcuda.so.535.104.05",
                "ro,nosuid,nodev,relatime", List.of("master:1"), "ext4", NVME, "rw"));
        // The kernel does not escape bytes above 0x7f: the UTF-8 of "é" arrives raw, one char per byte.
        assertThat(Fixtures.byId(mounts, 705).mountPoint().getBytes(StandardCharsets.ISO_8859_1))
                .isEqualTo("/mnt/café".getBytes(StandardCharsets.UTF_8));
        assertThat(Fixtures.byId(mounts, 706).source()).isEmpty();
        assertThat(Fixtures.byId(mounts, 706).superOptions()).isEqualTo("rw,inode64");
        // A bind-mounted file deleted on the host keeps its mount point; only the root says so.
        assertThat(Fixtures.byId(mounts, 707).root()).isEqualTo(LIB + "/libnvidia-ml.so.535.104.05//deleted");
        assertThat(Fixtures.byId(mounts, 707).mountPoint()).isEqualTo(LIB + "/libnvidia-ml.so.535.104.05");
        assertThat(Fixtures.byId(mounts, 708).optionalFields()).containsExactly("shared:12", "master:3");
        assertThat(Fixtures.byId(mounts, 708).fsType()).isEqualTo("fuse.sshfs");
        assertThat(Fixtures.byId(mounts, 708).source()).isEqualTo("user@host:/remote dir");
        assertThat(Fixtures.byId(mounts, 709).mountPoint()).isEqualTo("/mnt/back\\134literal");
        assertThat(Fixtures.byId(mounts, 709).optionalFields()).containsExactly("master:7", "propagate_from:2");
        assertThat(Fixtures.byId(mounts, 710).mountPoint()).isEqualTo("/opt/libcuda.so.535.104.05 ");
        assertThat(Fixtures.byId(mounts, 710).optionalFields()).containsExactly("unbindable");
        assertThat(Fixtures.byId(mounts, 711).mountPoint())
                .isEqualTo("/opt/libcuda.so.535.104.05\n/etc/ld.so.preload");
    }

    @Test
    void realKernelOutputFromTheBuildMachine() throws Exception {
        List<MountEntry> mounts = Fixtures.parse(Fixtures.REAL_VM);

        assertThat(Fixtures.byId(mounts, 27)).isEqualTo(new MountEntry(27, 1, 254, 0, "/", "/",
                "rw,relatime", List.of(), "ext4", "/dev/vda",
                "rw,discard,resv_strict,resuid=65534,resgid=65534"));
        assertThat(Fixtures.byId(mounts, 41).fsType()).isEqualTo("cgroup2");
    }

    @ParameterizedTest
    @FieldSource("io.driveralias.agent.mount.Fixtures#ALL")
    void streamAndStringGiveTheSameEntries(String name) throws Exception {
        assertThat(MountInfoParser.parse(Fixtures.text(name))).isEqualTo(Fixtures.parse(name));
    }


    @ParameterizedTest
    @ValueSource(ints = {0, 1, 2, 3, 4, 7})
    void anyNumberOfOptionalFields(int count) throws Exception {
        List<String> optional = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            optional.add(i % 2 == 0 ? "shared:" + (i + 1) : "master:" + (i + 1));
        }
        String line = "36 35 98:0 /mnt1 /mnt2 rw,noatime "
                + (count == 0 ? "" : String.join(" ", optional) + " ")
                + "- ext3 /dev/root rw,errors=continue";

        MountEntry entry = MountInfoParser.parse(line).getFirst();

        assertThat(entry.optionalFields()).isEqualTo(optional);
        assertThat(entry.fsType()).isEqualTo("ext3");
        assertThat(entry.source()).isEqualTo("/dev/root");
        assertThat(entry.superOptions()).isEqualTo("rw,errors=continue");
    }

    @Test
    void theExampleFromProc5() throws Exception {
        assertThat(MountInfoParser.parse(
                "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue"))
                .containsExactly(new MountEntry(36, 35, 98, 0, "/mnt1", "/mnt2", "rw,noatime",
                        List.of("master:1"), "ext3", "/dev/root", "rw,errors=continue"));
    }

    @Test
    void emptyInputHasNoMounts() throws Exception {
        assertThat(MountInfoParser.parse("")).isEmpty();
        assertThat(MountInfoParser.parse("\n\n")).isEmpty();
        assertThat(MountInfoParser.parse(new ByteArrayInputStream(new byte[0]))).isEmpty();
    }

    @Test
    void lastLineNeedsNoNewlineAndEmptyLinesAreSkipped() throws Exception {
        String a = lineWithMountPoint("/a");
        String b = lineWithMountPoint("/b");
        assertThat(MountInfoParser.parse(a + "\n\n" + b))
                .extracting(MountEntry::mountPoint).containsExactly("/a", "/b");
    }

    @Test
    void largestNumbersThatFitAnInt() throws Exception {
        MountEntry entry = MountInfoParser.parse(
                "2147483647 0 4095:1048575 / / rw - ext4 /dev/x rw").getFirst();
        assertThat(entry.mountId()).isEqualTo(Integer.MAX_VALUE);
        assertThat(entry.parentId()).isZero();
        assertThat(entry.major()).isEqualTo(4095);
        assertThat(entry.minor()).isEqualTo(1048575);
    }

    @Test
    void entriesCannotBeModified() throws Exception {
        List<MountEntry> mounts = MountInfoParser.parse(lineWithMountPoint("/a"));
        assertThatThrownBy(() -> mounts.add(mounts.getFirst()))
                .isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> mounts.getFirst().optionalFields().add("x"))
                .isInstanceOf(UnsupportedOperationException.class);
    }
}
