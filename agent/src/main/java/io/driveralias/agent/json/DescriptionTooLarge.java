package io.driveralias.agent.json;

import java.io.IOException;

/**
 * A container's record or spec holds more of what the agent keeps than the agent's bounds allow:
 * the description is refused (and the container reported), never held.
 */
public final class DescriptionTooLarge extends IOException {
    public DescriptionTooLarge(String message) {
        super(message);
    }
}
