package io.driveralias.agent.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ConfigParserTest {

    @Test
    void defaults() throws Exception {
        AgentConfig c = ConfigParser.parse(List.of("run"), Map.of());

        assertThat(c.command()).isEqualTo(AgentConfig.Command.RUN);
        assertThat(c.dockerHost()).isEqualTo("unix:///var/run/docker.sock");
        assertThat(c.listenHost()).isEqualTo("0.0.0.0");
        assertThat(c.listenPort()).isEqualTo(9470);
        assertThat(c.libraryDirectories()).isEqualTo(AgentConfig.DEFAULT_LIBRARY_DIRECTORIES);
        assertThat(c.ldconfig()).isEqualTo(AgentConfig.LdconfigMode.CACHE);
        assertThat(c.resyncInterval()).isEqualTo(Duration.ofSeconds(60));
        assertThat(c.kubernetes()).isEqualTo(AgentConfig.KubernetesMode.AUTO);
        assertThat(c.logFormat()).isEqualTo(AgentConfig.LogFormat.TEXT);
        assertThat(c.logLevel()).isEqualTo(AgentConfig.LogLevel.INFO);
        assertThat(c.hostProc()).isEqualTo("/proc");
        assertThat(c.devLinks()).isFalse();
        assertThat(c.driverVersion()).isEmpty();
        assertThat(c.nodeName()).isEmpty();
        assertThat(c.dockerApiVersion()).as("negotiated by default").isEmpty();
    }

    @Test
    void dockerApiVersionFromFlagOrEnvironmentWithinWhatTheAgentSpeaks() throws Exception {
        assertThat(ConfigParser.parse(List.of("run", "--docker-api-version", "1.24"), Map.of()).dockerApiVersion())
                .contains("1.24");
        assertThat(ConfigParser.parse(List.of("run"), Map.of("DRIVER_ALIAS_DOCKER_API_VERSION", "1.41"))
                .dockerApiVersion()).contains("1.41");
        for (String bad : List.of("1.23", "1.99", "latest", "1.24.1", "v1.24")) {
            assertThatThrownBy(() -> ConfigParser.parse(List.of("run", "--docker-api-version", bad), Map.of()))
                    .as(bad).hasMessageContaining("1.24 to 1.43");
        }
    }

    @Test
    void dockersContainerdIsFoundByDefaultNamedOrTurnedOff() throws Exception {
        assertThat(ConfigParser.parse(List.of("run"), Map.of()).dockerContainerdAddress()).isEqualTo("auto");
        assertThat(ConfigParser.parse(List.of("run", "--docker-containerd-address", "off"), Map.of())
                .dockerContainerdAddress()).isEqualTo("off");
        assertThat(ConfigParser.parse(List.of("run"), Map.of("DRIVER_ALIAS_DOCKER_CONTAINERD_ADDRESS",
                "/host/run/containerd/containerd.sock")).dockerContainerdAddress())
                .isEqualTo("unix:///host/run/containerd/containerd.sock");
        for (String bad : List.of("tcp://1.2.3.4:1", "containerd.sock", "unix://", "unix:///run/../etc/x", "yes")) {
            assertThatThrownBy(() -> ConfigParser.parse(List.of("run", "--docker-containerd-address", bad), Map.of()))
                    .as(bad).hasMessageContaining("--docker-containerd-address");
        }
    }

    @Test
    void repairBeforeStartIsOnUnlessTurnedOffAndGpuRuntimesDefaultToNvidia() throws Exception {
        AgentConfig defaults = ConfigParser.parse(List.of("run"), Map.of());
        assertThat(defaults.beforeStart()).isTrue();
        assertThat(defaults.gpuRuntimes()).containsExactly("nvidia");

        assertThat(ConfigParser.parse(List.of("run", "--before-start=false"), Map.of()).beforeStart()).isFalse();
        assertThat(ConfigParser.parse(List.of("run"), Map.of("DRIVER_ALIAS_BEFORE_START", "off")).beforeStart()).isFalse();
        assertThat(ConfigParser.parse(List.of("run", "--gpu-runtime", "nvidia", "--gpu-runtime", "nvidia-cdi"), Map.of())
                .gpuRuntimes()).containsExactly("nvidia", "nvidia-cdi");
        assertThat(ConfigParser.parse(List.of("run"), Map.of("DRIVER_ALIAS_GPU_RUNTIME", "a, b")).gpuRuntimes())
                .containsExactly("a", "b");
        assertThatThrownBy(() -> ConfigParser.parse(List.of("run", "--gpu-runtime", "../x"), Map.of()))
                .hasMessageContaining("--gpu-runtime");
    }

    /** The README's configuration table lists every option, with its variable and default. */
    @Test
    void everyOptionIsDocumentedInTheReadme() {
        String readme = io.driveralias.agent.metrics.RepoFiles.read("README.md");
        for (ConfigParser.Option o : ConfigParser.OPTIONS) {
            assertThat(readme).as("README row for --" + o.name())
                    .containsPattern("(?m)^\\| `--" + o.name() + "`[^|]*\\| `" + o.environmentVariable() + "`[^|]*\\| "
                            + (o.defaultValue() == null ? "[^|]+" : "`" + java.util.regex.Pattern.quote(o.defaultValue()) + "`")
                            + " \\|");
        }
    }

    @Test
    void theWebConfigFileIsOffByDefaultAndComesFromItsFlagOrVariable() throws Exception {
        assertThat(ConfigParser.parse(List.of("run"), Map.of()).webConfigFile()).isEmpty();
        assertThat(ConfigParser.parse(List.of("run"), Map.of("DRIVER_ALIAS_WEB_CONFIG_FILE", "/etc/web.yml")).webConfigFile())
                .hasValue("/etc/web.yml");
        assertThat(ConfigParser.parse(List.of("run", "--web-config-file", "/a.yml"),
                Map.of("DRIVER_ALIAS_WEB_CONFIG_FILE", "/etc/web.yml")).webConfigFile()).hasValue("/a.yml");
    }

    @Test
    void theLogLevelComesFromItsFlagOrVariableAndIsOneOfFive() throws Exception {
        assertThat(ConfigParser.parse(List.of("run"), Map.of("DRIVER_ALIAS_LOG_LEVEL", "debug")).logLevel())
                .isEqualTo(AgentConfig.LogLevel.DEBUG);
        assertThat(ConfigParser.parse(List.of("run", "--log-level", "WARN"), Map.of("DRIVER_ALIAS_LOG_LEVEL", "debug"))
                .logLevel()).isEqualTo(AgentConfig.LogLevel.WARN);
        assertThatThrownBy(() -> ConfigParser.parse(List.of("run", "--log-level=verbose"), Map.of()))
                .isInstanceOf(ConfigException.class).hasMessageContaining("error, warn, info, debug, trace");
    }

    @Test
    void flagBeatsEnvironmentBeatsDefault() throws Exception {
        Map<String, String> env = Map.of(
                "DRIVER_ALIAS_LISTEN", "127.0.0.1:9999",
                "DRIVER_ALIAS_RESYNC_INTERVAL", "5m",
                "DRIVER_ALIAS_DEV_LINKS", "true",
                "DOCKER_HOST", "unix:///from/docker_host.sock",
                "NODE_NAME", "gpu-node-7",
                "DRIVER_ALIAS_LIB_DIR", "/opt/nvidia/lib, /opt/other");

        AgentConfig fromEnv = ConfigParser.parse(List.of("run"), env);
        AgentConfig fromFlags = ConfigParser.parse(List.of("run", "--listen=:1234", "--resync-interval", "30s",
                "--dev-links=false", "--docker-host", "tcp://127.0.0.1:2375", "--node-name", "n1",
                "--lib-dir", "/x"), env);

        assertThat(fromEnv.listenPort()).isEqualTo(9999);
        assertThat(fromEnv.resyncInterval()).isEqualTo(Duration.ofMinutes(5));
        assertThat(fromEnv.devLinks()).isTrue();
        assertThat(fromEnv.dockerHost()).isEqualTo("unix:///from/docker_host.sock");
        assertThat(fromEnv.nodeName()).contains("gpu-node-7");
        assertThat(fromEnv.libraryDirectories()).endsWith("/opt/nvidia/lib", "/opt/other");
        assertThat(fromFlags.listenHost()).isEqualTo("0.0.0.0");
        assertThat(fromFlags.listenPort()).isEqualTo(1234);
        assertThat(fromFlags.resyncInterval()).isEqualTo(Duration.ofSeconds(30));
        assertThat(fromFlags.devLinks()).isFalse();
        assertThat(fromFlags.dockerHost()).isEqualTo("tcp://127.0.0.1:2375");
        assertThat(fromFlags.nodeName()).contains("n1");
        assertThat(fromFlags.libraryDirectories()).endsWith("/x").doesNotContain("/opt/other");
    }

    @Test
    void commandsAndIds() throws Exception {
        AgentConfig check = ConfigParser.parse(List.of("check", "abc", "def", "--json"), Map.of());
        AgentConfig root = ConfigParser.parse(List.of("repair", "--root", "/mnt/img", "--driver-version", "535.104.05"),
                Map.of());

        assertThat(check.containerIds()).containsExactly("abc", "def");
        assertThat(check.json()).isTrue();
        assertThat(root.root()).contains("/mnt/img");
        assertThat(root.driverVersion()).contains("535.104.05");
        AgentConfig checkRoot = ConfigParser.parse(List.of("check", "--root", "/mnt/img"), Map.of());
        assertThat(checkRoot.command()).isEqualTo(AgentConfig.Command.CHECK);
        assertThat(checkRoot.root()).contains("/mnt/img");
    }

    /** The message names only values the rule accepts, and everything under 1 s is refused. */
    @Test
    void theResyncIntervalIsAtLeastASecondAndItsMessageSaysSo() throws Exception {
        for (String refused : List.of("500ms", "999ms", "0s", "0", "soon", "-5s")) {
            assertThatThrownBy(() -> ConfigParser.parse(List.of("run", "--resync-interval", refused), Map.of()))
                    .as(refused).hasMessage("--resync-interval is a duration of at least 1s, like 30s, 5m or 1h, got "
                            + refused);
        }
        assertThat(ConfigParser.parse(List.of("run", "--resync-interval", "1000ms"), Map.of()).resyncInterval())
                .isEqualTo(Duration.ofSeconds(1));
        for (String example : List.of("30s", "5m", "1h")) {
            assertThat(ConfigParser.parse(List.of("run", "--resync-interval", example), Map.of()).resyncInterval())
                    .isPositive();
        }
    }

    @Test
    void clearErrors() {
        assertThatThrownBy(() -> ConfigParser.parse(List.of(), Map.of())).hasMessageContaining("no command");
        assertThatThrownBy(() -> ConfigParser.parse(List.of("fix"), Map.of())).hasMessageContaining("[run, check, repair]");
        assertThatThrownBy(() -> ConfigParser.parse(List.of("run", "--bogus"), Map.of())).hasMessageContaining("--bogus");
        assertThatThrownBy(() -> ConfigParser.parse(List.of("run", "--listen"), Map.of())).hasMessageContaining("needs a value");
        assertThatThrownBy(() -> ConfigParser.parse(List.of("run", "--ldconfig", "maybe"), Map.of()))
                .hasMessageContaining("[cache, off]");
        assertThatThrownBy(() -> ConfigParser.parse(List.of("run", "--ldconfig", "exec"), Map.of()))
                .hasMessageContaining("no longer supported");
        assertThatThrownBy(() -> ConfigParser.parse(List.of("run", "--driver-version", "latest"), Map.of()))
                .hasMessageContaining("535.104.05");
        assertThatThrownBy(() -> ConfigParser.parse(List.of("run", "--root", "/x"), Map.of()))
                .hasMessageContaining("--root goes with 'check' or 'repair'");
        assertThatThrownBy(() -> ConfigParser.parse(List.of("check", "--root", "/x", "abc"), Map.of()))
                .hasMessageContaining("no container ids");
        assertThatThrownBy(() -> ConfigParser.parse(List.of("run", "--lib-dir", "relative"), Map.of()))
                .hasMessageContaining("absolute");
        assertThatThrownBy(() -> ConfigParser.parse(List.of("run", "--listen", "1.2.3.4:99999"), Map.of()))
                .hasMessageContaining("65535");
        assertThatThrownBy(() -> ConfigParser.parse(List.of("run"), Map.of("DRIVER_ALIAS_DEV_LINKS", "sometimes")))
                .hasMessageContaining("true or false");
        assertThatThrownBy(() -> ConfigParser.parse(List.of("run", "--workers", "1", "--workers", "2"), Map.of()))
                .hasMessageContaining("given twice");
    }

    @Test
    void everyOptionHasItsEnvironmentVariable() {
        assertThat(ConfigParser.OPTIONS).extracting(ConfigParser.Option::environmentVariable)
                .contains("DRIVER_ALIAS_DOCKER_HOST", "DRIVER_ALIAS_LISTEN", "DRIVER_ALIAS_INCLUDE_IMAGE",
                        "DRIVER_ALIAS_EXCLUDE_IMAGE", "DRIVER_ALIAS_LIB_DIR", "DRIVER_ALIAS_DRIVER_VERSION",
                        "DRIVER_ALIAS_DEV_LINKS", "DRIVER_ALIAS_LDCONFIG", "DRIVER_ALIAS_RESYNC_INTERVAL",
                        "DRIVER_ALIAS_DRY_RUN", "DRIVER_ALIAS_KUBERNETES", "DRIVER_ALIAS_NODE_NAME",
                        "DRIVER_ALIAS_LOG_FORMAT", "DRIVER_ALIAS_HOST_PROC");
        assertThat(ConfigParser.usage()).contains("--resync-interval VALUE").contains("exit codes");
    }

    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(strings = {
        "/var/run/docker.sock", "tcp://1.2.3", "tcp://host", "unix://", "unix://relative/docker.sock",
        "http://127.0.0.1:2375", "tcp://host:0", "tcp://host:70000", "unix:docker.sock", "::"})
    void aDockerHostThatCannotWorkIsAUsageError(String host) {
        assertThatThrownBy(() -> ConfigParser.parse(List.of("run", "--docker-host", host), Map.of()))
                .isInstanceOf(ConfigException.class).hasMessageContaining("--docker-host");
        assertThatThrownBy(() -> ConfigParser.parse(List.of("check"), Map.of("DOCKER_HOST", host)))
                .isInstanceOf(ConfigException.class).hasMessageContaining("--docker-host");
    }

    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(strings = {
        "unix:///var/run/docker.sock", "unix:///run/user/1000/docker.sock", "tcp://127.0.0.1:2375", "tcp://docker:2376"})
    void workingDockerHostsAreAccepted(String host) throws Exception {
        assertThat(ConfigParser.parse(List.of("run", "--docker-host", host), Map.of()).dockerHost()).isEqualTo(host);
    }
}
