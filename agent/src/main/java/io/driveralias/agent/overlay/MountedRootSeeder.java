package io.driveralias.agent.overlay;

import io.driveralias.agent.core.ActionKind;
import io.driveralias.agent.core.AliasPlanner;
import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.DriverLibrary;
import io.driveralias.agent.core.FileNames;
import io.driveralias.agent.core.LateRepairCause;
import io.driveralias.agent.core.LinkAction;
import io.driveralias.agent.fs.Directory;
import io.driveralias.agent.fs.Errno;
import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.fs.PathResolver;
import io.driveralias.agent.fs.RootFs;
import io.driveralias.agent.repair.LoaderCache;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link CreateTimeSeeder}'s way in through a container's own overlay, once its runtime has
 * mounted it and that mount is verified to be the container's ({@link MountedRoot}): each
 * library directory's links written in-root, never across a mount, and the loader cache with
 * them, before runc runs the process. Apart from the seeder because this way writes through a
 * mounted root as the start path does, where the seeder's other way writes into unmounted
 * layers; the seeder picks which, and turns to this one when a start overtakes it. Its lines
 * are the seeder's.
 */
final class MountedRootSeeder {

    private static final Logger LOG = LoggerFactory.getLogger(CreateTimeSeeder.class);
    /**
     * How long the runtime may take from creating the root's directory to mounting the overlay on
     * it: Docker does both at once; containerd makes the bundle's {@code rootfs}, then starts the
     * task's shim (one per {@code ctr run}), which mounts it: over 200 ms on a busy 2-core node.
     */
    private static final Duration MOUNT_PATIENCE = Duration.ofMillis(1000);

    private final AliasPlanner planner;
    private final PathResolver resolver;
    private final LoaderCache loaderCache;
    /** Whether a task directory shows the container's program has not begun: the seeder's {@code beforeProgram}. */
    private final Predicate<String> beforeProgram;

    MountedRootSeeder(AliasPlanner planner, PathResolver resolver, LoaderCache loaderCache, Predicate<String> beforeProgram) {
        this.planner = planner;
        this.resolver = resolver;
        this.loaderCache = loaderCache;
        this.beforeProgram = beforeProgram;
    }

    /** Through the container's own overlay, once mounted: before runc runs its process. */
    Seeding seed(ContainerInfo info, String merged, String upper, SeedTargets.Wanted wanted) {
        List<LinkAction> written = new ArrayList<>();
        try (RootFs root = MountedRoot.await(merged, upper, MOUNT_PATIENCE, resolver).orElse(null)) {
            if (root == null) {
                LOG.debug("container {}: its root was not mounted in time, or not as its own overlay: "
                        + "left to the start path", info.id());
                return Seeding.skipped(LateRepairCause.MOUNT_TIMEOUT);
            }
            List<LoaderCache.Entry> right = new ArrayList<>();
            for (Map.Entry<String, List<DriverLibrary>> e : wanted.in(path -> isDirectory(root, path)).entrySet()) {
                written.addAll(linkThrough(root, e.getKey(), e.getValue(), right));
            }
            // The cache in the same moment: an entrypoint that asks `ldconfig -p` at its first
            // instruction must find what the links promise.
            LoaderCache.Result cache = right.isEmpty() ? LoaderCache.Result.NOT_CHECKED : loaderCache.refresh(root, right, true);
            LOG.debug("container {}: {} alias(es) written through its mounted root, loader cache {}", info.id(),
                    written.size(), cache.status());
        } catch (ErrnoException e) {
            LOG.debug("container {}: not repaired before start through its mounted root: {}", info.id(),
                    e.getMessage());
            return Seeding.skipped(CreateTimeSeeder.causeOf(e));
        }
        return Seeding.written(written, info.overlay().map(o -> beforeProgram.test(o.taskDir())).orElse(false));
    }

    /**
     * The links of one directory, in-root and never across a mount. A directory the image lacks
     * is left to runc (it makes the mount points) and to the start path.
     */
    private List<LinkAction> linkThrough(RootFs root, String path, List<DriverLibrary> libraries,
                                         List<LoaderCache.Entry> right) throws ErrnoException {
        Directory dir;
        try {
            dir = root.openDirectory(path, true);
        } catch (ErrnoException e) {
            if (isAbsent(e)) {
                return List.of();
            }
            throw e;
        }
        List<LinkAction> written = new ArrayList<>();
        try (dir) {
            for (LinkAction action : planner.plan(path, libraries, dir.listing())) {
                boolean ok = action.kind() == ActionKind.KEEP;
                if (action.kind().changesSomething()) {
                    dir.link(action.name(), action.target(), action.kind() == ActionKind.REPLACE);
                    ok = dir.readLink(action.name()).equals(action.target());
                    if (ok) {
                        written.add(action);
                    }
                }
                // SONAME aliases name a versioned file; development links are not cached.
                if (ok && FileNames.versionOf(action.target()).isPresent()) {
                    right.add(new LoaderCache.Entry(action.directory(), action.name(), action.target()));
                }
            }
        }
        return written;
    }

    /** A directory of the mounted image, reached in-root without crossing a mount. */
    private static boolean isDirectory(RootFs root, String path) throws ErrnoException {
        try (Directory ignored = root.openDirectory(path, true)) {
            return true;
        } catch (ErrnoException e) {
            if (isAbsent(e)) {
                return false;
            }
            throw e;
        }
    }

    /** A directory the image lacks, or one that leads elsewhere: nothing the agent writes into. */
    private static boolean isAbsent(ErrnoException e) {
        return e.is(Errno.ENOENT) || e.is(Errno.ENOTDIR) || e.is(Errno.ELOOP) || e.is(Errno.EXDEV);
    }
}
