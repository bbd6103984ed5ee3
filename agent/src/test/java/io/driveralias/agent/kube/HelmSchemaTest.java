package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.FieldSource;

/**
 * A wrong value is refused by {@code helm install} itself (values.schema.json, and the templates
 * where two values contradict each other), with a message that names it: never a DaemonSet whose
 * pods fail on the nodes, or an agent that stops with exit 2 there.
 */
class HelmSchemaTest {

    /** Values, and what helm's refusal must say. */
    static final List<Arguments> WRONG = List.of(
            Arguments.of("image: {tag: \"0.2.0:latest\"}", "/image/tag"),
            Arguments.of("image: {digest: latest}", "/image/digest"),
            Arguments.of("resources: {requests: {cpu: lots}}", "/resources/requests/cpu"),
            Arguments.of("tolerations: {operator: Exists}", "/tolerations"),
            Arguments.of("tolerations: [{operator: Exist}]", "/tolerations/0/operator"),
            Arguments.of("nodeSelector: {gpu: true}", "/nodeSelector/gpu"),
            Arguments.of("priorityClassName: System-Node-Critical", "/priorityClassName"),
            Arguments.of("runtimes: {watch: [cri-o]}", "/runtimes/watch/0"),
            Arguments.of("runtimes: {containerdSocket: /etc/containerd/containerd.sock}", "/runtimes/containerdSocket"),
            Arguments.of("nri: {deadline: 2s}", "/nri/deadline"),
            Arguments.of("nri: {deadlin: 250ms}", "'deadlin' not allowed"),
            Arguments.of("logLevel: verbose", "/logLevel"),
            Arguments.of("webConfig: {config: {basic_auth_users: {prometheus: hunter2}}}",
                    "/webConfig/config/basic_auth_users/prometheus"),
            Arguments.of("webConfig: {config: {tls_config: {cert_file: a}}}", "'tls_config' not allowed"),
            Arguments.of("extraEnv: [{value: \"4\"}]", "/extraEnv/0"),
            Arguments.of("serviceMonitor: {enabled: yes-please}", "/serviceMonitor/enabled"),
            Arguments.of("serviceMonitor: {interval: 30}", "/serviceMonitor/interval"),
            Arguments.of("serviceMonitors: {enabled: true}", "'serviceMonitors' not allowed"),
            // What the schema cannot see: values that contradict each other.
            Arguments.of("webConfig: {existingSecret: mine, config: {basic_auth_users: {p: \"$2y$10$x\"}}}",
                    "set config or existingSecret, not both"),
            Arguments.of("webConfig: {certificatesSecret: agent-tls}", "certificatesSecret needs"),
            Arguments.of("nri: {enabled: false, deadline: 250ms}", "nri.enabled is false"),
            Arguments.of("nri: {enabled: false}\nruntimes: {watch: [nri]}", "nri.enabled is false"));

    private static Helm.Result install(Path values) {
        return Helm.run(List.of("install", "--dry-run=client", HelmChart.RELEASE, HelmChart.directory().toString(),
                "--namespace", "driver-alias", "--values", values.toString()));
    }

    @ParameterizedTest
    @FieldSource("WRONG")
    void helmInstallRefusesAWrongValueAndNamesIt(String yaml, String named, @TempDir Path tmp) {
        Helm.Result result = install(HelmChart.valuesFile(tmp, "values", yaml + "\n"));

        assertThat(result.succeeded()).as("helm install accepted %s", yaml).isFalse();
        assertThat(result.err()).contains(named);
    }

    /** The control: the same command installs what values.yaml documents, every field set. */
    @Test
    void helmInstallAcceptsEveryValueSetTheWayValuesYamlSays(@TempDir Path tmp) {
        Helm.Result result = install(HelmChart.valuesFile(tmp, "values", """
                image: {repository: registry.example.com:5000/gpu/driver-alias-agent, tag: "0.2.0", pullPolicy: Always,
                        digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
                imagePullSecrets: [{name: my-registry}]
                resources: {requests: {cpu: 250m, memory: 128Mi}, limits: {memory: 256Mi}}
                affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: []}}}
                nodeSelector: {node-pool: gpu}
                tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
                priorityClassName: system-cluster-critical
                priorityClassQuota: {enabled: true}
                updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 10%}}
                podAnnotations: {a: b}
                podLabels: {team: ml}
                runtimes: {watch: [docker, containerd, nri], k3sRke2: true, dockerSocket: /var/run/docker.sock,
                           containerdSocket: /run/k3s/containerd/containerd.sock, containerdState: /run/k3s/containerd}
                nri: {enabled: true, socket: /var/run/nri/nri.sock, deadline: 1s}
                logLevel: debug
                webConfig: {config: {tls_server_config: {cert_file: tls.crt, key_file: tls.key}}, certificatesSecret: tls,
                            probes: HTTPS}
                extraArgs: [--resync-interval, 120s]
                extraEnv: [{name: DRIVER_ALIAS_WORKERS, value: "4"}]
                extraVolumes: [{name: data, hostPath: {path: /data/docker, type: Directory}}]
                extraVolumeMounts: [{name: data, mountPath: /data/docker}]
                serviceMonitor: {enabled: true, labels: {release: x}, interval: 15s, scrapeTimeout: 5s, scheme: https,
                                 tlsConfig: {serverName: a}, basicAuth: {username: {name: s, key: u}}}
                prometheusRule: {enabled: true, labels: {release: x}}
                dashboard: {enabled: true, labels: {grafana_dashboard: "1"}, annotations: {grafana_folder: GPU}}
                networkPolicy: {enabled: true, prometheusNamespace: monitoring}
                """));

        assertThat(result.succeeded()).as(result.err()).isTrue();
    }
}
