package io.driveralias.agent.http;

/** An {@link AgentStatus} a test sets by hand. */
final class FakeAgentStatus implements AgentStatus {

    volatile boolean alive;
    volatile boolean ready;

    @Override
    public boolean alive() {
        return alive;
    }

    @Override
    public boolean ready() {
        return ready;
    }
}
