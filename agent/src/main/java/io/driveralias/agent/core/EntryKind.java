package io.driveralias.agent.core;

/** What a directory entry is, as far as alias planning cares. */
public enum EntryKind {
    REGULAR_FILE,
    SYMLINK,
    DIRECTORY,
    /** FIFO, socket, device node or anything else: never touched, never opened. */
    OTHER
}
