package io.driveralias.agent.docker;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Where the agent looks for Docker's containerd, and which one it keeps. */
class ContainerdLinkTest {

    @TempDir
    Path run;

    private static DaemonInfo info(String address, String namespace, boolean imageStore) {
        return new DaemonInfo("/var/lib/docker", imageStore ? "overlayfs" : "overlay2",
                imageStore ? DaemonInfo.SNAPSHOTTER : "", "runc", address, namespace);
    }

    private static ContainerdLink link(String setting, String dockerHost, List<FakeDockerContainerd> opened) {
        return new ContainerdLink(setting, dockerHost, (address, namespace) -> {
            FakeDockerContainerd c = new FakeDockerContainerd(address, namespace);
            opened.add(c);
            return c;
        });
    }

    @Test
    void autoLooksWhereDockerSaysThenBesideDockersSocket() {
        ContainerdLink host = link("auto", "unix:///var/run/docker.sock", new ArrayList<>());
        assertThat(host.candidates(info("/run/containerd/containerd.sock", "moby", true))).containsExactly(
                "unix:///run/containerd/containerd.sock",
                "unix:///var/run/containerd/containerd.sock",
                "unix:///var/run/docker/containerd/containerd.sock");
        assertThat(host.candidates(info("", "", false))).containsExactly(
                "unix:///var/run/docker/containerd/containerd.sock", "unix:///var/run/containerd/containerd.sock");
    }

    @Test
    void inAPodTheNodesRunIsWhereDockersSocketIs() {
        ContainerdLink pod = link("auto", "unix:///host/run/docker.sock", new ArrayList<>());

        assertThat(pod.candidates(info("/run/containerd/containerd.sock", "moby", true))).containsExactly(
                "unix:///run/containerd/containerd.sock",
                "unix:///host/run/containerd/containerd.sock",
                "unix:///host/run/docker/containerd/containerd.sock");
    }

    @Test
    void aGivenSocketIsTheOnlyOneAndOverTcpOnlyWhatDockerSays() {
        assertThat(link("unix:///srv/c.sock", "unix:///var/run/docker.sock", new ArrayList<>())
                .candidates(info("/run/containerd/containerd.sock", "moby", true))).containsExactly("unix:///srv/c.sock");
        assertThat(link("auto", "tcp://10.0.0.1:2375", new ArrayList<>()).candidates(info("", "", true))).isEmpty();
    }

    @Test
    void theFirstSocketThatAnswersIsKeptUntilItStopsAnswering() throws IOException {
        Files.createDirectories(run.resolve("containerd"));
        Files.createFile(run.resolve("containerd/containerd.sock"));
        List<FakeDockerContainerd> opened = new ArrayList<>();
        ContainerdLink link = link("auto", "unix://" + run + "/docker.sock", opened);

        link.refresh(info("", "", true));
        assertThat(link.current()).get().extracting(DockerContainerd::address)
                .isEqualTo("unix://" + run + "/containerd/containerd.sock");
        assertThat(opened).singleElement().extracting(FakeDockerContainerd::namespace).isEqualTo("moby");

        link.refresh(info("", "", true));
        assertThat(opened).as("kept while it answers").hasSize(1);

        opened.getFirst().injectSilence();
        link.refresh(info("", "", true));
        assertThat(opened.getFirst().isClosed()).isTrue();
        assertThat(opened).hasSize(2);
        link.close();
        assertThat(opened.get(1).isClosed()).isTrue();
    }

    @Test
    void noSocketNoLinkAndOffOpensNothing() throws IOException {
        List<FakeDockerContainerd> opened = new ArrayList<>();
        ContainerdLink auto = link("auto", "unix://" + run + "/docker.sock", opened);
        auto.refresh(info("", "", true));
        assertThat(auto.current()).isEmpty();

        Files.createDirectories(run.resolve("containerd"));
        Files.createFile(run.resolve("containerd/containerd.sock"));
        ContainerdLink off = link("off", "unix://" + run + "/docker.sock", opened);
        off.refresh(info("", "", true));
        assertThat(off.current()).isEmpty();
        assertThat(opened).isEmpty();
    }

    @Test
    void theKubeletsNamespaceIsNeverReadForDocker() throws IOException {
        Files.createDirectories(run.resolve("containerd"));
        Files.createFile(run.resolve("containerd/containerd.sock"));
        List<FakeDockerContainerd> opened = new ArrayList<>();
        ContainerdLink link = link("auto", "unix://" + run + "/docker.sock", opened);

        link.refresh(info("", "k8s.io", true));

        assertThat(link.current()).isEmpty();
        assertThat(opened).isEmpty();
    }
}
