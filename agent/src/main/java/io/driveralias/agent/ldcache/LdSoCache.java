package io.driveralias.agent.ldcache;

import io.driveralias.agent.fs.Directory;
import io.driveralias.agent.fs.ReadableFile;
import io.driveralias.agent.fs.RootFs;
import io.driveralias.agent.repair.LoaderCache;
import java.util.List;

/** The repair's {@link LoaderCache}, done by {@link LdCacheUpdater}: the agent writes the cache itself. */
public final class LdSoCache implements LoaderCache {

    private final LdCacheUpdater updater = new LdCacheUpdater();

    @Override
    public Result refresh(RootFs root, List<Entry> entries, boolean apply) {
        List<Alias> aliases = aliases(entries);
        return result(apply ? updater.update(root, aliases) : updater.check(root, aliases));
    }

    @Override
    public Result seed(ReadableFile current, Directory etc, List<Entry> entries) {
        return result(updater.seed(current, etc, aliases(entries)));
    }

    private static List<Alias> aliases(List<Entry> entries) {
        return entries.stream().map(e -> Alias.of(e.directory(), e.soname())).toList();
    }

    private static Result result(LdCacheUpdate update) {
        return switch (update.outcome()) {
            case UPDATED -> Result.of(Status.UPDATED);
            case ALREADY_CURRENT -> Result.of(Status.CURRENT);
            case NO_CACHE -> Result.of(Status.NO_CACHE);
            case STALE -> Result.of(Status.WOULD_UPDATE);
            case FAILED -> Result.failed(update.reason().orElseThrow(), update.message());
        };
    }
}
