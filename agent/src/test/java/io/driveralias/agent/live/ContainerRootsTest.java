package io.driveralias.agent.live;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.fs.PathResolver;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** ContainerRoots against a stand-in for the host's /proc (the agent's --host-proc). */
class ContainerRootsTest {

    private static final String ID = "c0ffee".repeat(10) + "abcd";

    @TempDir
    Path proc;

    private ContainerInfo running(int pid) {
        return ContainerInfo.builder(ID).name("/x").image("img").running(true).pid(pid)
                .startedAt(Optional.of(Instant.EPOCH)).storage("overlay2").build();
    }

    private Path process(int pid, String mountinfo) throws IOException {
        Path dir = Files.createDirectories(proc.resolve(String.valueOf(pid)));
        Files.writeString(dir.resolve("cgroup"), "12:cpu:/docker/" + ID + "\n");
        Files.writeString(dir.resolve("stat"), pid + " (sleep) S 1 1 1 0");
        Files.writeString(dir.resolve("mountinfo"), mountinfo);
        Path root = Files.createDirectories(proc.resolve("root-" + pid + "/usr/lib/x86_64-linux-gnu"));
        Files.createSymbolicLink(dir.resolve("root"), root.getParent().getParent().getParent());
        return dir;
    }

    @Test
    void aMountTableOverItsBoundStillLeavesTheLibraryDirectoryScan() throws Exception {
        Path dir = process(4242, "");
        try (RandomAccessFile huge = new RandomAccessFile(dir.resolve("mountinfo").toFile(), "rw")) {
            huge.setLength(5L << 20); // a container with CAP_SYS_ADMIN can make its table this long
        }
        ContainerRoots roots = new ContainerRoots(proc.toString(), PathResolver.detect(false));

        try (OpenedContainer opened = roots.open(running(4242), () -> { })) {
            assertThat(opened.via()).isEqualTo("proc");
            assertThat(opened.injectedFiles()).isEmpty();
            assertThat(opened.root().openDirectory("/usr/lib/x86_64-linux-gnu", false)).isNotNull();
        }
    }

    @Test
    void everyVersionedFileMountIsAnInjectedCandidateWhoseIdentityIsJudgedLater() throws Exception {
        String lib = "/usr/lib/x86_64-linux-gnu";
        process(4343, String.join("\n",
                "1 0 0:52 / / rw - overlay overlay rw",
                "2 1 259:1 " + lib + "/libcuda.so.535.104.05 " + lib + "/libcuda.so.535.104.05 ro - ext4 /dev/x rw",
                "3 1 0:52 /tmp/evil.so " + lib + "/libnvidia-ml.so.535.104.05 ro - overlay overlay rw", ""));
        ContainerRoots roots = new ContainerRoots(proc.toString(), PathResolver.detect(false));

        try (OpenedContainer opened = roots.open(running(4343), () -> { })) {
            assertThat(opened.injectedFiles()).containsExactly(lib + "/libcuda.so.535.104.05",
                    lib + "/libnvidia-ml.so.535.104.05");
        }
    }

    @Test
    void aZombieHasEndedAndAMissingProcessIsDockersToJudge() throws Exception {
        process(4444, "");
        Path zombie = process(4545, "");
        Files.writeString(zombie.resolve("stat"), "4545 (a) b) c) Z 1 1 1 0");
        ContainerRoots roots = new ContainerRoots(proc.toString(), PathResolver.detect(false));

        assertThat(roots.processState(4444)).isEqualTo(ContainerRoots.ProcessState.RUNNING);
        assertThat(roots.processState(4545)).as("zombie, with ')' in its name")
                .isEqualTo(ContainerRoots.ProcessState.ENDED);
        assertThat(roots.processState(4646)).isEqualTo(ContainerRoots.ProcessState.NOT_VISIBLE);
        assertThat(roots.processState(0)).isEqualTo(ContainerRoots.ProcessState.NOT_VISIBLE);
    }

    /**
     * Found: a process was tied to its container when its cgroup text merely contained the id. A
     * short id ({@code init}, valid for {@code ctr}) matched pid 1's {@code /init.scope}, whose root
     * is the host's. Only a whole path element names a container, and pid 1 is never one.
     */
    @Test
    void aProcessWhoseCgroupOnlyContainsTheIdOrPidOneIsNeverTheContainers() throws Exception {
        String shortId = "init";
        Path host = Files.createDirectories(proc.resolve("1"));
        Files.writeString(host.resolve("stat"), "1 (systemd) S 0 1 1 0");
        Files.writeString(host.resolve("mountinfo"), "");
        Files.createSymbolicLink(host.resolve("root"), Files.createDirectories(proc.resolve("host-root")));
        Path impostor = Files.createDirectories(proc.resolve("777"));
        Files.writeString(impostor.resolve("cgroup"), "1:name=systemd:/init.scope\n0::/init.scope\n");
        Files.writeString(impostor.resolve("stat"), "777 (sh) S 1 1 1 0");
        Files.writeString(impostor.resolve("mountinfo"), "");
        Files.createSymbolicLink(impostor.resolve("root"), proc.resolve("host-root"));
        Path pidOne = proc.resolve("1");
        Files.writeString(pidOne.resolve("cgroup"), "0::/k8s.io/init\n");
        ContainerRoots roots = new ContainerRoots(proc.toString(), PathResolver.detect(false));
        ContainerInfo.Builder info = ContainerInfo.builder(shortId).name("/x").image("img").running(true)
                .startedAt(Optional.of(Instant.EPOCH)).storage("overlay2");

        // Refused, the process leaves the runtime's merged directory, which this container lacks: no root at all.
        assertThatThrownBy(() -> roots.open(info.pid(777).build(), () -> { }).close()).as("init.scope does not name init")
                .isInstanceOf(io.driveralias.agent.fs.ErrnoException.class);
        assertThatThrownBy(() -> roots.open(info.pid(1).build(), () -> { }).close()).as("pid 1, whatever its cgroup says")
                .isInstanceOf(io.driveralias.agent.fs.ErrnoException.class);
        Files.writeString(impostor.resolve("cgroup"), "0::/k8s.io/init\n");
        try (OpenedContainer opened = roots.open(info.pid(777).build(), () -> { })) {
            assertThat(opened.via()).as("a whole element names it").isEqualTo("proc");
        }
    }
}
