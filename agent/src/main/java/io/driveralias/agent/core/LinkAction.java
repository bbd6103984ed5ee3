package io.driveralias.agent.core;

import java.util.Objects;

/**
 * One planned link: {@code directory/name -> target}. The target is always a plain name in
 * the same directory, so the link means the same thing inside and outside any mount namespace.
 * {@code detail} says why, for humans ("dangling", "regular file", ...), or is empty.
 */
public record LinkAction(ActionKind kind, String directory, String name, String target, String detail) {

    public LinkAction {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(directory, "directory");
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(target, "target");
        detail = detail == null ? "" : detail;
    }

    /** Where the alias lives inside the root, e.g. {@code /usr/lib64/libcuda.so.1}. */
    public String path() {
        return directory.endsWith("/") ? directory + name : directory + "/" + name;
    }
}
