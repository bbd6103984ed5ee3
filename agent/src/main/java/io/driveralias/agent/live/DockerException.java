package io.driveralias.agent.live;

/** Docker answered with an error, or could not be reached. */
public class DockerException extends Exception {

    public DockerException(String message) {
        super(message);
    }

    public DockerException(String message, Throwable cause) {
        super(message, cause);
    }

    /** The daemon cannot be reached at all (socket missing, refused, timed out). */
    public static final class Unreachable extends DockerException {
        public Unreachable(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** The container does not exist (any more). */
    public static final class NoSuchContainer extends DockerException {
        public NoSuchContainer(String id) {
            super("no such container " + id);
        }
    }
}
