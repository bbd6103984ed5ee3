package io.driveralias.agent.kube;

import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.jdkhttp.JdkHttpClientFactory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/**
 * The agent's fabric8 client: the JDK HTTP client, short timeouts, and no retries of its
 * own ({@link Fabric8PodEvents} retries within its own bounds), so that a hanging API server
 * costs one queue slot for a few seconds and never more.
 */
public final class KubernetesClients {

    /** Where the kubelet mounts a pod's service account token and the cluster's CA. */
    public static final Path SERVICE_ACCOUNT = Path.of("/var/run/secrets/kubernetes.io/serviceaccount");

    /** Per request, until the response headers arrive. */
    public static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(5);

    public static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(3);

    private KubernetesClients() {
    }

    /**
     * The configuration a pod gets from its service account: {@code KUBERNETES_SERVICE_HOST}
     * (and {@code _PORT}) in the environment and a token file. Empty outside a pod, or when the
     * token is not mounted ({@code automountServiceAccountToken: false}).
     */
    public static Optional<Config> inCluster(Map<String, String> env, Path serviceAccountDir) {
        String host = env.getOrDefault("KUBERNETES_SERVICE_HOST", "").trim();
        String port = env.getOrDefault("KUBERNETES_SERVICE_PORT", "").trim();
        Path token = serviceAccountDir.resolve("token");
        if (host.isEmpty() || !Files.isRegularFile(token)) {
            return Optional.empty();
        }
        String authority = host.contains(":") && !host.startsWith("[") ? "[" + host + "]" : host;
        ConfigBuilder config = new ConfigBuilder(Config.empty())
                .withAutoConfigure(false)
                .withMasterUrl("https://" + authority + ":" + (port.isEmpty() ? "443" : port))
                // Bound service account tokens expire (1 h) and the kubelet rewrites the file:
                // read it for every request rather than once.
                .withOauthTokenProvider(() -> readToken(token));
        Path ca = serviceAccountDir.resolve("ca.crt");
        if (Files.isRegularFile(ca)) {
            config.withCaCertFile(ca.toString());
        }
        return Optional.of(config.build());
    }

    /** A client on {@code base} with the agent's timeouts, on the JDK HTTP client. */
    public static KubernetesClient build(Config base, Duration requestTimeout) {
        Config config = new ConfigBuilder(base)
                .withRequestTimeout(Math.toIntExact(requestTimeout.toMillis()))
                .withConnectionTimeout(Math.toIntExact(Math.min(CONNECT_TIMEOUT.toMillis(), requestTimeout.toMillis())))
                .withRequestRetryBackoffLimit(0)
                .withUserAgent("driver-alias-agent")
                .build();
        return new KubernetesClientBuilder()
                .withConfig(config)
                .withHttpClientFactory(new JdkHttpClientFactory())
                .build();
    }

    private static String readToken(Path token) {
        try {
            return Files.readString(token).trim();
        } catch (IOException e) {
            throw new KubernetesClientException("cannot read the service account token " + token, e);
        }
    }
}
