package io.driveralias.agent.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.driveralias.agent.config.RuntimeChoice.Kind;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class RuntimeChoiceTest {

    private static AgentConfig parse(List<String> args, Map<String, String> env) throws ConfigException {
        return ConfigParser.parse(args, env);
    }

    private static List<Kind> resolve(AgentConfig config, String... existing) throws ConfigException {
        return RuntimeChoice.resolve(config, Set.of(existing)::contains);
    }

    @Test
    void defaultsWatchWhatIsThereInContainerdsUsualPlaces() throws ConfigException {
        AgentConfig c = parse(List.of("run"), Map.of());
        assertThat(c.runtimes()).containsExactly("auto");
        assertThat(c.containerdAddress()).isEqualTo("unix:///run/containerd/containerd.sock");
        assertThat(c.containerdNamespace()).isEqualTo("k8s.io");
        assertThat(c.containerdState()).isEqualTo("/run/containerd");
    }

    /**
     * NRI serves containerd's starts: found by its socket where containerd is watched, or named
     * (which watches containerd); and alone where its socket is and containerd is not (CRI-O).
     */
    @Test
    void nriIsServedWhereItsSocketExistsBesideContainerdOrWhenNamed() throws ConfigException {
        AgentConfig auto = parse(List.of("run"), Map.of());
        assertThat(auto.nriSocket()).isEqualTo("/var/run/nri/nri.sock");
        assertThat(resolve(auto, "/run/containerd/containerd.sock", "/var/run/nri/nri.sock"))
                .containsExactly(Kind.CONTAINERD, Kind.NRI);
        assertThat(resolve(auto, "/var/run/nri/nri.sock")).as("CRI-O: NRI alone").containsExactly(Kind.NRI);
        assertThat(RuntimeChoice.nriAlone(resolve(auto, "/var/run/nri/nri.sock"))).isTrue();
        assertThat(resolve(auto, "/var/run/docker.sock", "/var/run/nri/nri.sock")).as("Docker beside a runtime with NRI")
                .containsExactly(Kind.DOCKER, Kind.NRI);
        assertThat(RuntimeChoice.nriAlone(resolve(auto, "/run/containerd/containerd.sock", "/var/run/nri/nri.sock"))).isFalse();
        assertThat(resolve(parse(List.of("run", "--runtime", "nri"), Map.of()))).containsExactly(Kind.CONTAINERD, Kind.NRI);
        AgentConfig elsewhere = parse(List.of("run"), Map.of("DRIVER_ALIAS_NRI_SOCKET", "/run/k3s/nri/nri.sock"));
        assertThat(resolve(elsewhere, "/run/containerd/containerd.sock", "/run/k3s/nri/nri.sock"))
                .containsExactly(Kind.CONTAINERD, Kind.NRI);
        assertThatThrownBy(() -> parse(List.of("run", "--nri-socket", "nri.sock"), Map.of())).isInstanceOf(ConfigException.class);
        assertThatThrownBy(() -> parse(List.of("run", "--nri-deadline", "2s"), Map.of())).isInstanceOf(ConfigException.class)
                .hasMessageContaining("under 2s");
        assertThat(parse(List.of("run", "--nri-deadline", "250ms"), Map.of()).nriDeadline()).hasMillis(250);
    }

    @Test
    void autoWatchesEachRuntimeWhoseSocketExistsDockerFirst() throws ConfigException {
        AgentConfig c = parse(List.of("run"), Map.of());
        assertThat(resolve(c, "/var/run/docker.sock")).containsExactly(Kind.DOCKER);
        assertThat(resolve(c, "/run/containerd/containerd.sock")).containsExactly(Kind.CONTAINERD);
        assertThat(resolve(c, "/run/containerd/containerd.sock", "/var/run/docker.sock")).containsExactly(Kind.DOCKER,
                Kind.CONTAINERD);
    }

    @Test
    void autoFindingNothingSaysWhatItLookedForWhere() throws ConfigException {
        AgentConfig c = parse(List.of("run"), Map.of());
        assertThatThrownBy(() -> resolve(c)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("found no container runtime")
                .hasMessageContaining("/var/run/docker.sock").hasMessageContaining("/run/containerd/containerd.sock")
                .hasMessageContaining("--runtime containerd");
    }

    @Test
    void aRuntimeNamedIsWatchedEvenWithoutItsSocket() throws ConfigException {
        assertThat(resolve(parse(List.of("run", "--runtime", "containerd"), Map.of()))).containsExactly(Kind.CONTAINERD);
        assertThat(resolve(parse(List.of("run", "--runtime", "containerd", "--runtime", "docker"), Map.of())))
                .containsExactly(Kind.DOCKER, Kind.CONTAINERD);
        assertThat(resolve(parse(List.of("run"), Map.of("DRIVER_ALIAS_RUNTIME", "docker, containerd"))))
                .containsExactly(Kind.DOCKER, Kind.CONTAINERD);
        assertThat(resolve(parse(List.of("run", "--runtime", "docker"), Map.of()), "/run/containerd/containerd.sock"))
                .as("not auto: only what is named").containsExactly(Kind.DOCKER);
    }

    @Test
    void anAddressGivenIsTriedWhereNoSocketExistsSoThatAWrongOneFailsLoudly() throws ConfigException {
        assertThat(resolve(parse(List.of("run", "--docker-host", "unix:///nonexistent/docker.sock"), Map.of())))
                .containsExactly(Kind.DOCKER);
        assertThat(resolve(parse(List.of("run"), Map.of("CONTAINERD_ADDRESS", "/x/containerd.sock"))))
                .containsExactly(Kind.CONTAINERD);
        assertThat(resolve(parse(List.of("run", "--docker-host", "tcp://10.0.0.1:2375"), Map.of())))
                .as("TCP cannot be looked for: counted as there").containsExactly(Kind.DOCKER);
    }

    @Test
    void theDaemonSetGivesBothAddressesAndEachNodeWatchesOnlyWhatItRuns() throws ConfigException {
        // Both addresses come from the manifest's environment on every node; a Docker-only node must
        // not watch a containerd that is not there (it would never be ready), nor the reverse.
        AgentConfig both = parse(List.of("run"), Map.of("DRIVER_ALIAS_DOCKER_HOST", "unix:///host/run/docker.sock",
                "DRIVER_ALIAS_CONTAINERD_ADDRESS", "unix:///host/run/containerd/containerd.sock"));
        assertThat(resolve(both, "/host/run/docker.sock")).containsExactly(Kind.DOCKER);
        assertThat(resolve(both, "/host/run/containerd/containerd.sock")).containsExactly(Kind.CONTAINERD);
        assertThat(resolve(both, "/host/run/docker.sock", "/host/run/containerd/containerd.sock"))
                .containsExactly(Kind.DOCKER, Kind.CONTAINERD);
        assertThat(resolve(both)).as("neither there: both tried, the agent says so and is not ready")
                .containsExactly(Kind.DOCKER, Kind.CONTAINERD);
    }

    @Test
    void containerdsAddressFromFlagEnvironmentOrCtrsVariable() throws ConfigException {
        assertThat(parse(List.of("run", "--containerd-address", "unix:///var/snap/containerd.sock"), Map.of())
                .containerdAddress()).isEqualTo("unix:///var/snap/containerd.sock");
        assertThat(parse(List.of("run"), Map.of("CONTAINERD_ADDRESS", "/run/k3s/containerd/containerd.sock"))
                .containerdAddress()).isEqualTo("unix:///run/k3s/containerd/containerd.sock");
        assertThat(parse(List.of("run"), Map.of("DRIVER_ALIAS_CONTAINERD_ADDRESS", "/a.sock", "CONTAINERD_ADDRESS", "/b.sock"))
                .containerdAddress()).isEqualTo("unix:///a.sock");
        for (String bad : List.of("tcp://1.2.3.4:1", "unix://host/x.sock", "relative.sock", "unix:///")) {
            assertThatThrownBy(() -> parse(List.of("run", "--containerd-address", bad), Map.of())).as(bad)
                    .hasMessageContaining("--containerd-address");
        }
    }

    @Test
    void dockersNamespaceAndNonNamesAreRefused() throws ConfigException {
        assertThat(parse(List.of("run", "--containerd-namespace", "default"), Map.of()).containerdNamespace()).isEqualTo("default");
        assertThatThrownBy(() -> parse(List.of("run", "--containerd-namespace", "moby"), Map.of()))
                .hasMessageContaining("moby is Docker's own namespace").hasMessageContaining("--runtime docker");
        for (String bad : List.of("../x", "a b", "x".repeat(77), "-k8s")) {
            assertThatThrownBy(() -> parse(List.of("run", "--containerd-namespace", bad), Map.of())).as(bad)
                    .hasMessageContaining("--containerd-namespace");
        }
    }

    @Test
    void theStateDirectoryIsAbsoluteAndTheRuntimesKnown() throws ConfigException {
        assertThat(parse(List.of("run", "--containerd-state", "/var/run/containerd/"), Map.of()).containerdState())
                .isEqualTo("/var/run/containerd");
        assertThatThrownBy(() -> parse(List.of("run", "--containerd-state", "run/containerd"), Map.of()))
                .hasMessageContaining("--containerd-state");
        assertThatThrownBy(() -> parse(List.of("run", "--runtime", "cri-o"), Map.of()))
                .hasMessageContaining("--runtime is auto, docker, containerd or nri");
    }
}
