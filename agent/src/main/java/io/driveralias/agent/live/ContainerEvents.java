package io.driveralias.agent.live;

/** A source of one runtime's container lifecycle events that reconnects on its own. */
public interface ContainerEvents extends AutoCloseable {

    interface Listener {
        /** Must return quickly. */
        void onEvent(ContainerRuntime.Event event);

        /** The stream is (re)connected ({@code api}: what the runtime said of itself): anything may have been missed, reconcile now. */
        void onConnected(String api);

        /** The stream broke; a reconnect with backoff follows. */
        void onDisconnected(String why);
    }

    void start(Listener listener);

    /** True while the loop is running (connected or reconnecting). */
    boolean alive();

    @Override
    void close();
}
