package io.driveralias.agent.ldcache;

import io.driveralias.agent.core.FailureReason;
import java.util.Optional;

/** What became of a container's loader cache; {@code reason} is present only for FAILED. */
public record LdCacheUpdate(Outcome outcome, Optional<FailureReason> reason, String message) {

    public enum Outcome {
        /** The cache now lists every alias. */
        UPDATED,
        /** It already did; nothing was written. */
        ALREADY_CURRENT,
        /** The container has no cache: none is made (the loader's default directories apply). */
        NO_CACHE,
        /** Read-only check only: the cache lacks (or misstates) some alias. */
        STALE,
        /** Not touched, for {@code reason}. */
        FAILED
    }

    static LdCacheUpdate of(Outcome outcome, String message) {
        return new LdCacheUpdate(outcome, Optional.empty(), message);
    }

    static LdCacheUpdate failed(FailureReason reason, String message) {
        return new LdCacheUpdate(Outcome.FAILED, Optional.of(reason), message);
    }
}
