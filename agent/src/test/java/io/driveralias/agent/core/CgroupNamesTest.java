package io.driveralias.agent.core;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A process belongs to a container when a whole element of its cgroup path names it, in every
 * layout runtimes use. (A systemd scope of another kind whose name ends in {@code -<id>}, such as
 * {@code session-3.scope} for a {@code ctr} container named {@code 3}, still matches: such a process
 * is in the host's mount namespace, which ContainerRoots refuses on its own.)
 */
class CgroupNamesTest {

    private static final String ID = "4f1c0ffee".repeat(7) + "a";

    @ParameterizedTest(name = "{0} / {1}: {2}")
    @CsvSource(delimiter = '|', textBlock = """
            12:cpu,cpuacct:/docker/ID                                                  | ID   | true
            0::/kubepods/besteffort/pod1234/ID                                         | ID   | true
            0::/system.slice/docker-ID.scope                                           | ID   | true
            0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-ID.scope             | ID   | true
            0::/machine.slice/libpod-ID.scope/container                                | ID   | true
            4:memory:/libpod_parent/libpod-ID                                          | ID   | true
            0::/k8s.io/init                                                            | init | true
            0::/init.scope                                                             | init | false
            1:name=systemd:/init.scope                                                 | init | false
            0::/system.slice/crio-ID.scope                                             | ID   | true
            4:memory:/kubepods/burstable/pod1/crio-ID                                  | ID   | true
            0::/docker/IDextra                                                         | ID   | false
            0::/docker/xID                                                             | ID   | false
            0::/docker/-ID                                                             | ID   | false
            0::/docker/ID.scope                                                        | ID   | false
            0::/                                                                       | ID   | false
            garbage without colons ID                                                  | ID   | false
            """)
    void namesTheContainerOnlyByAWholeElement(String line, String id, boolean expected) {
        assertThat(CgroupNames.namesContainer(line.replace("ID", ID), id.replace("ID", ID))).isEqualTo(expected);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({"''", "a"})
    void anEmptyIdNamesNothing(String line) {
        assertThat(CgroupNames.namesContainer("0::/docker/" + line, "")).isFalse();
    }
}
