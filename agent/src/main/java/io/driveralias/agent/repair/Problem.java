package io.driveralias.agent.repair;

import io.driveralias.agent.core.FailureReason;

/** Something found while locating or repairing that a user should hear about. */
public record Problem(String path, FailureReason reason, String message) {
}
