package io.driveralias.agent.ldcache;

/**
 * One library in the loader cache: {@code key} is the SONAME the loader looks up,
 * {@code value} the path it opens. {@code flags} holds the ELF kind (low byte) and the
 * architecture ABI (high byte, e.g. 0x0300 x86-64); {@code hwcap} with bit 62 set names a
 * glibc-hwcaps subdirectory by its index in {@link LdCache#hwcapsSubdirectories()}.
 * Strings are ISO-8859-1, one char per byte, so any byte string survives a round trip.
 */
record CacheEntry(int flags, String key, String value, int osVersion, long hwcap) {

    boolean isHwcapsSubdirectoryEntry() {
        return CacheFormat.isHwcapsSubdirectoryEntry(hwcap);
    }

    /** The directory of {@code value}: everything before its last slash. */
    public String directory() {
        int slash = value.lastIndexOf('/');
        return slash <= 0 ? (slash == 0 ? "/" : "") : value.substring(0, slash);
    }
}
