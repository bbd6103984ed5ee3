package io.driveralias.agent.mount;

/**
 * The mountinfo text is not something the agent can trust to describe a container's mounts.
 * The message never quotes the offending line: its text is chosen by whoever made the
 * container and would end up in the agent's logs.
 */
public final class MountInfoException extends Exception {

    private final int lineNumber;

    /** A problem with one line; {@code lineNumber} is 1-based. */
    public MountInfoException(int lineNumber, String reason) {
        super("mountinfo line " + lineNumber + ": " + reason);
        this.lineNumber = lineNumber;
    }

    /** A problem with the input as a whole (its size), not with any one line. */
    public MountInfoException(String reason) {
        super(reason);
        this.lineNumber = 0;
    }

    /** The 1-based line at fault, or 0 when the input as a whole was refused. */
    public int lineNumber() {
        return lineNumber;
    }
}
