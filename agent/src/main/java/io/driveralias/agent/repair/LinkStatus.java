package io.driveralias.agent.repair;

/** What happened to one planned link. */
public enum LinkStatus {
    /** Dry run: would be created or replaced. */
    PLANNED,
    /** Created or replaced, and verified. */
    APPLIED,
    /** Already right (verified), or no alias needed. */
    UNCHANGED,
    /** Not done: conflict, unsafe path, read-only, or failed verification. */
    FAILED
}
