package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeProjection;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.snakeyaml.engine.v2.api.Load;
import org.snakeyaml.engine.v2.api.LoadSettings;

/**
 * TLS and basic auth on the metrics port through the chart (docs/monitoring.md): the agent is told
 * the file, the file and its certificates are in one directory (so that the file names them as
 * they are), and the kubelet's probes speak what the port speaks: HTTPS with TLS, a bare TCP
 * connect where a client certificate is required, which a probe cannot present.
 */
class HelmWebConfigTest {

    private static final String FILE = "/etc/driver-alias/web/web-config.yml";

    private static List<HasMetadata> render(Path tmp, String yaml) {
        return HelmChart.render(Manifests.CHART + "base", HelmChart.valuesFile(tmp, "values", yaml));
    }

    private static Container agent(List<HasMetadata> rendered) {
        return pod(rendered).getContainers().getFirst();
    }

    private static PodSpec pod(List<HasMetadata> rendered) {
        return Manifests.only(rendered, "DaemonSet", DaemonSet.class).getSpec().getTemplate().getSpec();
    }

    @Test
    void offByDefault() {
        List<HasMetadata> rendered = HelmChart.render(Manifests.CHART + "base");

        assertThat(rendered).noneMatch(r -> r.getKind().equals("Secret"));
        assertThat(agent(rendered).getEnv()).extracting(EnvVar::getName).doesNotContain("DRIVER_ALIAS_WEB_CONFIG_FILE");
        assertThat(agent(rendered).getLivenessProbe().getHttpGet().getScheme()).isNull();
    }

    /** The file as given, in a Secret beside the agent, with cert-manager's Secret in the same directory. */
    @Test
    void theFileAndItsCertificatesAreOneDirectoryTheAgentIsPointedAt(@TempDir Path tmp) {
        List<HasMetadata> rendered = render(tmp, """
                webConfig:
                  config:
                    tls_server_config: {cert_file: tls.crt, key_file: tls.key, client_ca_file: ca.crt,
                                        client_auth_type: RequireAndVerifyClientCert}
                    basic_auth_users: {prometheus: "$2y$10$abcdefghijklmnopqrstuv"}
                  certificatesSecret: driver-alias-agent-tls
                """);
        Secret secret = Manifests.only(rendered, "Secret", Secret.class);
        Container agent = agent(rendered);

        assertThat(secret.getMetadata().getNamespace()).isEqualTo("driver-alias");
        assertThat(new Load(LoadSettings.builder().build()).loadFromString(secret.getStringData().get("web-config.yml")))
                .isEqualTo(Map.of("tls_server_config", Map.of("cert_file", "tls.crt", "key_file", "tls.key",
                        "client_ca_file", "ca.crt", "client_auth_type", "RequireAndVerifyClientCert"),
                        "basic_auth_users", Map.of("prometheus", "$2y$10$abcdefghijklmnopqrstuv")));
        assertThat(agent.getEnv()).contains(new EnvVar("DRIVER_ALIAS_WEB_CONFIG_FILE", FILE, null));
        var mount = agent.getVolumeMounts().stream().filter(m -> FILE.startsWith(m.getMountPath() + "/")).findFirst()
                .orElseThrow();
        assertThat(mount.getReadOnly()).isTrue();
        assertThat(mount.getSubPath()).as("a subPath mount would never see a renewed certificate").isNull();
        Volume volume = pod(rendered).getVolumes().stream().filter(v -> v.getName().equals(mount.getName())).findFirst()
                .orElseThrow();
        List<VolumeProjection> sources = volume.getProjected().getSources();
        assertThat(sources).extracting(s -> s.getSecret().getName())
                .containsExactly(secret.getMetadata().getName(), "driver-alias-agent-tls");
        assertThat(sources.getFirst().getSecret().getItems()).singleElement().satisfies(i -> {
            assertThat(i.getKey()).isEqualTo("web-config.yml");
            assertThat(i.getPath()).isEqualTo("web-config.yml");
        });
    }

    @Test
    void theProbesSpeakWhatThePortSpeaks(@TempDir Path tmp) {
        String basicAuth = "basic_auth_users: {prometheus: \"$2y$10$abcdefghijklmnopqrstuv\"}";
        Probe plain = agent(render(tmp.resolve("a"), "webConfig: {config: {" + basicAuth + "}}\n")).getLivenessProbe();
        Probe tls = agent(render(tmp.resolve("b"), "webConfig: {config: {tls_server_config: {cert_file: a, key_file: b,"
                + " client_auth_type: VerifyClientCertIfGiven, client_ca_file: c}, " + basicAuth + "}}\n"))
                .getReadinessProbe();
        Container required = agent(render(tmp.resolve("c"), "webConfig: {config: {tls_server_config: {cert_file: a,"
                + " key_file: b, client_auth_type: RequireAnyClientCert}}}\n"));
        Probe existing = agent(render(tmp.resolve("d"), "webConfig: {existingSecret: mine}\n")).getLivenessProbe();
        Probe told = agent(render(tmp.resolve("e"), "webConfig: {existingSecret: mine, probes: TCP}\n")).getLivenessProbe();

        assertThat(plain.getHttpGet().getScheme()).isNull();
        assertThat(tls.getHttpGet().getScheme()).isEqualTo("HTTPS");
        assertThat(tls.getHttpGet().getPath()).isEqualTo("/readyz");
        for (Probe probe : List.of(required.getLivenessProbe(), required.getReadinessProbe(), told)) {
            assertThat(probe.getHttpGet()).isNull();
            assertThat(probe.getTcpSocket().getPort().getStrVal()).isEqualTo("metrics");
        }
        assertThat(existing.getHttpGet().getScheme()).isEqualTo("HTTPS");
    }

    /** A Secret of one's own: mounted, and the chart makes none. */
    @Test
    void anExistingSecretIsMountedAndNoneIsMade(@TempDir Path tmp) {
        List<HasMetadata> rendered = render(tmp, "webConfig: {existingSecret: my-web-config}\n");

        assertThat(rendered).noneMatch(r -> r.getKind().equals("Secret"));
        assertThat(pod(rendered).getVolumes().stream().filter(v -> v.getProjected() != null)).singleElement()
                .satisfies(v -> assertThat(v.getProjected().getSources()).extracting(s -> s.getSecret().getName())
                        .containsExactly("my-web-config"));
    }
}
