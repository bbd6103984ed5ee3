package io.driveralias.agent.core;

/** What the planner decided for one alias name. */
public enum ActionKind {
    /** Nothing at the alias name: create the link. */
    CREATE,
    /** A symlink that points elsewhere (another driver version, or nowhere): replace it. */
    REPLACE,
    /** Already the right link. */
    KEEP,
    /** A regular file, directory or special file holds the name: report, never touch. */
    CONFLICT,
    /** The library's SONAME is its own file name: no alias is needed. */
    SKIP;

    public boolean changesSomething() {
        return this == CREATE || this == REPLACE;
    }
}
