package io.driveralias.agent.kube;

import io.driveralias.agent.config.AgentConfig.KubernetesMode;
import io.driveralias.agent.config.ConfigException;
import io.driveralias.agent.metrics.RepairMetrics;
import io.fabric8.kubernetes.client.Config;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code --kubernetes auto|on|off} to a {@link PodEvents}. {@code auto}: Events when the agent
 * runs in a pod with a service account (token file and {@code KUBERNETES_SERVICE_HOST}),
 * otherwise none, silently; {@code on}: the same configuration is required, and its absence is a
 * configuration error; {@code off}: none. Events name the node, so a node name is needed too.
 */
public final class PodEventsFactory {

    private static final Logger LOG = LoggerFactory.getLogger(PodEventsFactory.class);

    private PodEventsFactory() {
    }

    public static PodEvents create(KubernetesMode mode, Optional<String> nodeName, RepairMetrics metrics, Clock clock,
                                   Map<String, String> env) throws ConfigException {
        return create(mode, nodeName, metrics, clock, env, KubernetesClients.SERVICE_ACCOUNT);
    }

    static PodEvents create(KubernetesMode mode, Optional<String> nodeName, RepairMetrics metrics, Clock clock,
                            Map<String, String> env, Path serviceAccountDir) throws ConfigException {
        if (mode == KubernetesMode.OFF) {
            return PodEvents.NOOP;
        }
        Optional<Config> config = KubernetesClients.inCluster(env, serviceAccountDir);
        if (config.isEmpty()) {
            if (mode == KubernetesMode.ON) {
                throw new ConfigException("--kubernetes on: no in-cluster configuration ("
                        + (env.getOrDefault("KUBERNETES_SERVICE_HOST", "").isBlank()
                                ? "KUBERNETES_SERVICE_HOST is not set"
                                : "no service account token at " + serviceAccountDir.resolve("token"))
                        + "): run the agent in a pod with a service account, or use --kubernetes auto or off");
            }
            return PodEvents.NOOP;
        }
        if (nodeName.isEmpty() || nodeName.get().isBlank()) {
            if (mode == KubernetesMode.ON) {
                throw new ConfigException("--kubernetes on needs the node name: --node-name, or NODE_NAME from"
                        + " the downward API (fieldRef spec.nodeName)");
            }
            LOG.warn("Kubernetes Events disabled: the node name is unknown (set NODE_NAME from the downward API,"
                    + " fieldRef spec.nodeName, or --node-name)");
            return PodEvents.NOOP;
        }
        LOG.info("Kubernetes Events on pods enabled ({})", config.get().getMasterUrl());
        return Fabric8PodEvents.start(KubernetesClients.build(config.get(), KubernetesClients.REQUEST_TIMEOUT),
                nodeName.get(), metrics, clock, Fabric8PodEvents.Settings.DEFAULTS);
    }
}
