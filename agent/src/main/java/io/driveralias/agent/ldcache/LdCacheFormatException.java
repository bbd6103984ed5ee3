package io.driveralias.agent.ldcache;

/**
 * The bytes are not a loader cache the agent can read and write back without breaking it:
 * a bad magic, an offset or count outside the file, an unterminated string, a file too large.
 * The only exception the codec lets escape, whatever the input.
 */
public final class LdCacheFormatException extends Exception {

    public LdCacheFormatException(String message) {
        super(message);
    }
}
