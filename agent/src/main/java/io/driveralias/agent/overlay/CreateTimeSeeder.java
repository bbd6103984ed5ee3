package io.driveralias.agent.overlay;

import io.driveralias.agent.core.AliasPlanner;
import io.driveralias.agent.core.DriverLibrary;
import io.driveralias.agent.core.LateRepairCause;
import io.driveralias.agent.core.LinkAction;
import io.driveralias.agent.core.RuntimeDriverFiles;
import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.fs.Errno;
import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.fs.KernelFiles;
import io.driveralias.agent.fs.Libc;
import io.driveralias.agent.fs.OpenFlags;
import io.driveralias.agent.fs.PathResolver;
import io.driveralias.agent.fs.ProcessStartTime;
import io.driveralias.agent.repair.LoaderCache;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Repairs a container before it starts. When a created container's configuration already
 * names the driver files it will receive (bind mounts of versioned libraries), or asks a GPU
 * runtime for them (which adds the same files this node's earlier GPU containers received, see
 * {@link RuntimeDriverFiles}), its aliases are written so that they exist at its first
 * instruction; an alias to a file the runtime has yet to mount resolves the moment it lands.
 * One of two ways:
 *
 * <ul>
 * <li>Docker is starting it ({@code docker run}: the start follows the create within
 * milliseconds): once Docker has mounted its overlay at {@code MergedDir}, and that mount is
 * verified to be the container's own (see {@link MountedRoot}), through that root, in-root,
 * an ordinary overlay write. The process runs only after runc's mounts and hooks, 150 ms later.</li>
 * <li>It is not starting (the kubelet starts it later): into its writable layer (overlay2's
 * {@code UpperDir}), while no overlay is mounted over it. Only where every component of the
 * library directory is a real directory in the merged view of its layers: an image whose
 * {@code /lib64} is a symlink keeps it, and a directory created in the upper layer copies the
 * owner and mode of the one it stands over. Lower layers are never written.</li>
 * </ul>
 * Anything unusual leaves the container to the start path, which verifies in every case.
 */
public final class CreateTimeSeeder {

    private static final Logger LOG = LoggerFactory.getLogger(CreateTimeSeeder.class);
    /** How long a created container may take to begin its start ({@code docker run}: a few ms). */
    private static final Duration START_PATIENCE = Duration.ofMillis(100);

    /**
     * @param libraryDirectories where a GPU runtime's files may land, in order
     * @param startTimes         the host's processes, to tell one that has not begun its program
     */
    public record Settings(List<String> libraryDirectories, ProcessStartTime startTimes) {
        public Settings {
            libraryDirectories = List.copyOf(libraryDirectories);
        }

        public Settings(List<String> libraryDirectories) {
            this(libraryDirectories, new ProcessStartTime("/proc", java.time.Clock.systemUTC()));
        }
    }

    private final java.util.Set<String> warned = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final UpperLayerWriter upperLayer;
    private final MountedRootSeeder throughRoot;
    private final PathResolver resolver;
    private final SeedTargets targets;
    private final LoaderCache loaderCache;
    private final ProcessStartTime startTimes;

    /** {@code loaderCache}: the container's ld.so.cache, listed in the same moment as the links. */
    public CreateTimeSeeder(HostDriver driver, AliasPlanner planner, PathResolver resolver, Settings settings,
                            LoaderCache loaderCache) {
        this.loaderCache = loaderCache;
        this.upperLayer = new UpperLayerWriter(planner);
        this.resolver = resolver;
        this.throughRoot = new MountedRootSeeder(planner, resolver, loaderCache, this::beforeProgram);
        this.targets = new SeedTargets(driver, settings.libraryDirectories());
        this.startTimes = settings.startTimes();
    }

    /**
     * For a container just created: waits briefly for its runtime to start it ({@code docker run})
     * and writes its aliases through its overlay once mounted. Empty when it did not begin to
     * start in time (the kubelet starts it later: {@link #seed} then writes into its layer).
     */
    public Optional<Seeding> seedIfStarting(ContainerInfo info) {
        if (info.running() || info.startedAt().isPresent()) {
            return Optional.of(Seeding.NOTHING_TO_DO);
        }
        Optional<SeedTargets.Wanted> wanted = targets.of(info);
        if (wanted.isEmpty()) {
            return Optional.of(skippedIfGpu(info));
        }
        Optional<ContainerInfo.OverlayLayers> layers = info.overlay()
                .filter(l -> !l.upperDir().isEmpty() && !l.mergedDir().isEmpty());
        if (layers.isEmpty()) {
            return Optional.of(Seeding.skipped(LateRepairCause.NO_OVERLAY));
        }
        if (!MountedRoot.awaitStarting(layers.get().mergedDir(), START_PATIENCE)) {
            return Optional.empty();
        }
        return Optional.of(throughRoot.seed(info, layers.get().mergedDir(), layers.get().upperDir(), wanted.get()));
    }

    /** Into the container's writable layer while it is not mounted, or through its overlay if it just was. */
    public Seeding seed(ContainerInfo info) {
        if (info.running() || info.startedAt().isPresent()) {
            return Seeding.NOTHING_TO_DO;
        }
        Optional<SeedTargets.Wanted> wanted = targets.of(info);
        if (wanted.isEmpty()) {
            return skippedIfGpu(info);
        }
        if (info.overlay().isEmpty()) {
            // devicemapper, btrfs, zfs, vfs: no upper and lower layers to write into before the start.
            LOG.debug("container {}: not repaired before start: storage driver {} has no overlay layers; "
                    + "the start path repairs it through /proc/<pid>/root", info.id(), info.storage());
            return Seeding.skipped(LateRepairCause.NO_OVERLAY);
        }
        ContainerInfo.OverlayLayers overlay = info.overlay().get();
        if (overlay.upperDir().isEmpty() || overlay.mergedDir().isEmpty() || overlay.lowerDir().isEmpty()) {
            return Seeding.skipped(LateRepairCause.UNREADABLE);
        }
        String merged = overlay.mergedDir();
        if (MountedRoot.starting(merged)) {
            return throughRoot.seed(info, merged, overlay.upperDir(), wanted.get());
        }
        UpperLayerWriter.NotStarted notStarted = () -> requireUnmounted(merged);
        List<LinkAction> written = new ArrayList<>();
        try {
            // With `docker run` the start usually wins the race: find out before any other work.
            notStarted.require();
        } catch (ErrnoException e) {
            return throughRoot.seed(info, merged, overlay.upperDir(), wanted.get());
        }
        try (LayerStack layers = LayerStack.open(overlay.upperDir(), overlay.lowerDir(), resolver)) {
            Map<String, List<DriverLibrary>> libraries = wanted.get().in(path -> {
                Optional<MergedDirectory> dir = layers.directory(path);
                dir.ifPresent(MergedDirectory::close);
                return dir.isPresent();
            });
            List<LoaderCache.Entry> right = new ArrayList<>();
            for (Map.Entry<String, List<DriverLibrary>> e : libraries.entrySet()) {
                written.addAll(upperLayer.seedDirectory(layers, e.getKey(), e.getValue(), notStarted, right));
            }
            // The cache in the same moment: an entrypoint that asks `ldconfig -p` at its first
            // instruction must find what the links promise.
            LoaderCache.Result cache = upperLayer.seedLoaderCache(layers, right, loaderCache, notStarted);
            LOG.debug("container {}: {} alias(es) written into its writable layer, loader cache {}", info.id(),
                    written.size(), cache.status());
        } catch (ErrnoException e) {
            if (e.is(Errno.EBUSY) && MountedRoot.starting(merged)) {
                // Its start began meanwhile (under the CRI the kubelet starts a container the moment it
                // is created): what is left goes through its root once mounted, before its process runs.
                Seeding mounted = throughRoot.seed(info, merged, overlay.upperDir(), wanted.get());
                if (written.isEmpty()) {
                    return mounted;
                }
                List<LinkAction> both = new ArrayList<>(written);
                both.addAll(mounted.links());
                return Seeding.written(both, mounted.beforeProgram());
            }
            // Its runtime removed the layer, or something in the layers is not what it should be:
            // the start path repairs (and reports) through the container's root.
            // A refusal (a missing capability) is worth a warning, once for each kind.
            boolean refused = e.is(Errno.EPERM) || e.is(Errno.EACCES);
            if (refused && warned.add(e.getMessage().replaceAll("[0-9a-f]{12,}", "*"))) {
                LOG.warn("container {}: not repaired before start, the start path will: {}", info.id(), e.getMessage());
            } else {
                LOG.debug("container {}: not seeded before start: {}", info.id(), e.getMessage());
            }
            return Seeding.skipped(causeOf(e));
        }
        // Written while no root was mounted, or while its process had not begun its program.
        return Seeding.written(written, !MountedRoot.starting(merged) || beforeProgram(overlay.taskDir()));
    }

    /**
     * Whether the container's program has provably not begun: the runtime has made no task for
     * it yet, or the task's process (its {@code init.pid}) is still the runtime's init. False
     * where the runtime keeps no such record (Docker's overlay2).
     */
    boolean beforeProgram(String taskDir) {
        if (taskDir.isEmpty()) {
            return false;
        }
        int dir;
        try {
            dir = Libc.openHost(taskDir, OpenFlags.O_PATH | OpenFlags.O_DIRECTORY | OpenFlags.O_NOFOLLOW);
        } catch (ErrnoException e) {
            return e.is(Errno.ENOENT);
        }
        try {
            String pid = new String(KernelFiles.read(dir, "init.pid", 32), java.nio.charset.StandardCharsets.US_ASCII).trim();
            return startTimes.inRuntimeInit(Integer.parseInt(pid));
        } catch (ErrnoException e) {
            // No pid yet: runc has not made the process, so its program cannot have begun.
            return e.is(Errno.ENOENT);
        } catch (NumberFormatException e) {
            return false;
        } finally {
            Libc.close(dir);
        }
    }

    /** Why a write into the layers failed, as an operator reads it. */
    static LateRepairCause causeOf(ErrnoException e) {
        if (e.is(Errno.EPERM) || e.is(Errno.EACCES)) {
            return LateRepairCause.PERMISSION;
        }
        if (e.is(Errno.ENOSYS)) {
            return LateRepairCause.KERNEL;
        }
        if (e.is(Errno.EBUSY)) {
            return LateRepairCause.MOUNT_TIMEOUT;
        }
        return e.is(Errno.ENOENT) ? LateRepairCause.UNREADABLE : LateRepairCause.LAYERS;
    }

    /** No aliases to write: for a container whose GPU runtime adds files not yet seen, that is a cause. */
    private Seeding skippedIfGpu(ContainerInfo info) {
        return info.gpu().addsDriverFiles() ? Seeding.skipped(LateRepairCause.RUNTIME_FILES_UNKNOWN) : Seeding.NOTHING_TO_DO;
    }

    private static void requireUnmounted(String mergedDir) throws ErrnoException {
        try {
            Libc.close(Libc.openHost(mergedDir, OpenFlags.O_PATH | OpenFlags.O_NOFOLLOW));
        } catch (ErrnoException e) {
            if (e.is(Errno.ENOENT)) {
                return;
            }
            throw e;
        }
        throw new ErrnoException("seed", mergedDir + " exists: the container is starting", Errno.EBUSY);
    }
}
