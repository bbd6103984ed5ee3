package io.driveralias.agent.live;

/** A container runtime answered with an error, or could not be reached. */
public class ContainerRuntimeException extends Exception {

    public ContainerRuntimeException(String message) {
        super(message);
    }

    public ContainerRuntimeException(String message, Throwable cause) {
        super(message, cause);
    }

    /** The runtime cannot be reached at all (socket missing, refused, timed out). */
    public static final class Unreachable extends ContainerRuntimeException {
        public Unreachable(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** Something answers at the runtime's address, but not with the runtime's API (another runtime's socket). */
    public static final class WrongApi extends ContainerRuntimeException {
        public WrongApi(String message) {
            super(message);
        }
    }

    /**
     * The runtime's description of a container holds more of what the agent keeps (mounts,
     * annotations, NVIDIA variables) than the agent's bounds allow: refused, and reported.
     */
    public static final class TooLarge extends ContainerRuntimeException {
        public TooLarge(String message) {
            super(message);
        }
    }

    /** The container does not exist (any more). */
    public static final class NoSuchContainer extends ContainerRuntimeException {
        public NoSuchContainer(String id) {
            super("no such container " + id);
        }
    }
}
