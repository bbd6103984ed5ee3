package io.driveralias.agent.repair;

import io.driveralias.agent.core.FailureReason;
import io.driveralias.agent.fs.Directory;
import io.driveralias.agent.fs.ReadableFile;
import io.driveralias.agent.fs.RootFs;
import java.util.List;
import java.util.Optional;

/**
 * The root's loader cache ({@code /etc/ld.so.cache}), kept in step with the aliases: what
 * {@code ldconfig} would have added, written by the agent itself, so that nothing from the
 * container ever runs ({@code ldconfig -p | grep libcuda.so.1} is how NVIDIA's entrypoints
 * look for the driver). Owned by {@link RootRepairer}; {@link #OFF} leaves every cache alone.
 */
public interface LoaderCache {

    /** One alias the cache must list: {@code directory/soname}, a link to {@code target}. */
    record Entry(String directory, String soname, String target) {
    }

    /** What became of the cache. */
    enum Status {
        /** Not looked at ({@code --ldconfig off}, or no alias to list). */
        NOT_CHECKED,
        /** The root has no cache: the loader searches its default directories instead. */
        NO_CACHE,
        /** Every alias was listed already. */
        CURRENT,
        /** Entries were added or fixed, and the new cache was verified. */
        UPDATED,
        /** Dry run: entries are missing. */
        WOULD_UPDATE,
        /** The cache could not be read, understood or written: see the reason. */
        FAILED
    }

    record Result(Status status, Optional<FailureReason> reason, String message) {

        public static final Result NOT_CHECKED = new Result(Status.NOT_CHECKED, Optional.empty(), "");

        public static Result of(Status status) {
            return new Result(status, Optional.empty(), "");
        }

        public static Result failed(FailureReason reason, String message) {
            return new Result(Status.FAILED, Optional.of(reason), message);
        }
    }

    /** Lists every entry in the root's cache ({@code apply}), or only checks (dry run). */
    Result refresh(RootFs root, List<Entry> entries, boolean apply);

    /**
     * Before a container's start, while its root is not mounted: {@code current} (the cache its
     * layers will show) with every entry, written into {@code etc} (its writable layer's /etc).
     */
    default Result seed(ReadableFile current, Directory etc, List<Entry> entries) {
        return Result.NOT_CHECKED;
    }

    LoaderCache OFF = (root, entries, apply) -> Result.NOT_CHECKED;
}
