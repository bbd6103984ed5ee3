package io.driveralias.agent.live;

/** A source of container lifecycle events that reconnects on its own. */
public interface ContainerEvents extends AutoCloseable {

    interface Listener {
        /** {@code action} is create, start, die or destroy. Must return quickly. */
        void onEvent(String containerId, String action);

        /** The stream is (re)connected: anything may have been missed, reconcile now. */
        void onConnected();

        /** The stream broke; a reconnect with backoff follows. */
        void onDisconnected(String why);
    }

    void start(Listener listener);

    /** True while the loop is running (connected or reconnecting). */
    boolean alive();

    @Override
    void close();
}
