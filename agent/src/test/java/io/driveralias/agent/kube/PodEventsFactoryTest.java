package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.driveralias.agent.config.AgentConfig.KubernetesMode;
import io.driveralias.agent.config.ConfigException;
import io.fabric8.kubernetes.client.Config;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class PodEventsFactoryTest {

    private static final Map<String, String> IN_CLUSTER = Map.of(
            "KUBERNETES_SERVICE_HOST", "10.96.0.1", "KUBERNETES_SERVICE_PORT", "443");

    @TempDir
    Path serviceAccount;

    private final FakeRepairMetrics metrics = new FakeRepairMetrics();

    private PodEvents create(KubernetesMode mode, Optional<String> node, Map<String, String> env)
            throws ConfigException {
        return PodEventsFactory.create(mode, node, metrics, Clock.systemUTC(), env, serviceAccount);
    }

    private void mountToken() throws Exception {
        Files.writeString(serviceAccount.resolve("token"), "token-1\n");
    }

    @Test
    void offIsSilent() throws Exception {
        mountToken();
        assertThat(create(KubernetesMode.OFF, Optional.of("n"), IN_CLUSTER)).isSameAs(PodEvents.NOOP);
    }

    @Test
    void autoOutsideAClusterIsSilent() throws Exception {
        assertThat(create(KubernetesMode.AUTO, Optional.of("n"), Map.of())).isSameAs(PodEvents.NOOP);
        // the variable alone is not enough: automountServiceAccountToken may be off
        assertThat(create(KubernetesMode.AUTO, Optional.of("n"), IN_CLUSTER)).isSameAs(PodEvents.NOOP);
    }

    @Test
    void autoInAPodSendsEvents() throws Exception {
        mountToken();
        try (PodEvents events = create(KubernetesMode.AUTO, Optional.of("n"), IN_CLUSTER)) {
            assertThat(events).isInstanceOf(Fabric8PodEvents.class);
        }
    }

    @Test
    void autoWithoutANodeNameIsSilent() throws Exception {
        mountToken();
        assertThat(create(KubernetesMode.AUTO, Optional.empty(), IN_CLUSTER)).isSameAs(PodEvents.NOOP);
    }

    @Test
    void onOutsideAClusterIsAConfigurationError() {
        assertThatThrownBy(() -> create(KubernetesMode.ON, Optional.of("n"), Map.of()))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("--kubernetes on").hasMessageContaining("KUBERNETES_SERVICE_HOST is not set");
        assertThatThrownBy(() -> create(KubernetesMode.ON, Optional.of("n"), IN_CLUSTER))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("no service account token at " + serviceAccount.resolve("token"));
    }

    @Test
    void onWithoutANodeNameIsAConfigurationError() throws Exception {
        mountToken();
        assertThatThrownBy(() -> create(KubernetesMode.ON, Optional.empty(), IN_CLUSTER))
                .isInstanceOf(ConfigException.class).hasMessageContaining("NODE_NAME");
    }

    @Test
    void inClusterConfigurationPointsAtTheServiceWithItsCa() throws Exception {
        mountToken();
        Files.writeString(serviceAccount.resolve("ca.crt"), "not really a certificate");

        Config config = KubernetesClients.inCluster(IN_CLUSTER, serviceAccount).orElseThrow();

        assertThat(config.getMasterUrl()).startsWith("https://10.96.0.1:443");
        assertThat(config.getCaCertFile()).isEqualTo(serviceAccount.resolve("ca.crt").toString());
        assertThat(config.getOauthTokenProvider().getToken()).isEqualTo("token-1");
    }

    @Test
    void anIpv6ServiceAddressIsBracketed() throws Exception {
        mountToken();
        Config config = KubernetesClients.inCluster(
                Map.of("KUBERNETES_SERVICE_HOST", "fd00::1", "KUBERNETES_SERVICE_PORT", "6443"), serviceAccount)
                .orElseThrow();
        assertThat(config.getMasterUrl()).startsWith("https://[fd00::1]:6443");
    }

    @Test
    void aRotatedTokenIsUsedForTheNextRequest() throws Exception {
        mountToken();
        try (StubApiServer server = StubApiServer.failing(500, 0)) {
            Config inCluster = KubernetesClients.inCluster(IN_CLUSTER, serviceAccount).orElseThrow();
            // the same configuration, on plain HTTP to the stub
            Config config = new io.fabric8.kubernetes.client.ConfigBuilder(inCluster)
                    .withMasterUrl(server.url()).build();
            try (PodEvents events = Fabric8PodEvents.start(KubernetesClients.build(config, Duration.ofSeconds(5)),
                    "n", metrics, Clock.systemUTC(), Fabric8PodEvents.Settings.DEFAULTS)) {
                events.repaired(Reports.container("ml", "a", "c"), Reports.repaired());
                metrics.awaitEventsTotal(1, Duration.ofSeconds(20));
                Files.writeString(serviceAccount.resolve("token"), "token-2\n");
                events.repaired(Reports.container("ml", "b", "c"), Reports.repaired());
                metrics.awaitEventsTotal(2, Duration.ofSeconds(20));
            }
            assertThat(metrics.events("sent")).isEqualTo(2);
            assertThat(server.authorizations()).containsExactly("Bearer token-1", "Bearer token-2");
        }
    }
}
