package io.driveralias.agent;

import sun.misc.Signal;

/**
 * SIGTERM (the kubelet stopping the pod) and SIGINT start a graceful shutdown. Handling the
 * signal, instead of leaving it to shutdown hooks, lets the agent finish its work and exit 0.
 */
final class Signals {

    private Signals() {
    }

    static void onTerminate(Runnable action) {
        Signal.handle(new Signal("TERM"), s -> action.run());
        Signal.handle(new Signal("INT"), s -> action.run());
    }
}
