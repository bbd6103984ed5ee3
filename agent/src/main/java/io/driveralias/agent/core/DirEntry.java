package io.driveralias.agent.core;

import java.util.Objects;

/**
 * One name in a directory. {@code linkTarget} is the raw text of a symlink (never resolved),
 * and is null for every other kind.
 */
public record DirEntry(String name, EntryKind kind, String linkTarget) {

    public DirEntry {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(kind, "kind");
        if ((kind == EntryKind.SYMLINK) != (linkTarget != null)) {
            throw new IllegalArgumentException("a link target belongs to symlinks only: " + name);
        }
    }

    public static DirEntry file(String name) {
        return new DirEntry(name, EntryKind.REGULAR_FILE, null);
    }

    public static DirEntry symlink(String name, String target) {
        return new DirEntry(name, EntryKind.SYMLINK, target);
    }

    public static DirEntry directory(String name) {
        return new DirEntry(name, EntryKind.DIRECTORY, null);
    }

    public static DirEntry other(String name) {
        return new DirEntry(name, EntryKind.OTHER, null);
    }
}
