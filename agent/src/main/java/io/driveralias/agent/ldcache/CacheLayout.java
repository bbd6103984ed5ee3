package io.driveralias.agent.ldcache;

/**
 * The three file layouts glibc's loader accepts. A cache is written back in the layout it was
 * read in, so an image that chose the compat layout for an old loader keeps it.
 */
public enum CacheLayout {
    /** "glibc-ld.so.cache1.1" alone: ldconfig's default since glibc 2.32. */
    NEW,
    /**
     * "ld.so-1.7.0" entries, then the new layout inside the old string table: ldconfig's
     * default before 2.32. The loader uses the new part whenever it is there.
     */
    COMPAT,
    /** "ld.so-1.7.0" alone (ldconfig -c old): libc5 / glibc 2.0 era, still read by ld.so. */
    OLD
}
