package io.driveralias.agent.http;

/** What the probes ask. Implemented by the running agent. */
public interface AgentStatus {

    /** {@code /healthz}: the event loop is alive (connected or reconnecting). */
    boolean alive();

    /** {@code /readyz}: the first reconcile finished and Docker is reachable now. */
    boolean ready();
}
