package io.driveralias.agent.cli;

/** The exit codes of the README's Commands table: scripts and Kubernetes probes depend on them. */
public final class ExitCodes {

    public static final int HEALTHY = 0;
    public static final int UNREPAIRED = 1;
    public static final int USAGE = 2;
    /** A watched runtime (Docker, containerd) cannot be reached. */
    public static final int RUNTIME_UNREACHABLE = 3;

    private ExitCodes() {
    }
}
