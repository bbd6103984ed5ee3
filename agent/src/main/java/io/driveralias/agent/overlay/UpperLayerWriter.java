package io.driveralias.agent.overlay;

import io.driveralias.agent.core.ActionKind;
import io.driveralias.agent.core.AliasPlanner;
import io.driveralias.agent.core.DriverLibrary;
import io.driveralias.agent.core.FileNames;
import io.driveralias.agent.core.LinkAction;
import io.driveralias.agent.fs.Directory;
import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.fs.ReadableFile;
import io.driveralias.agent.fs.RootFs;
import io.driveralias.agent.repair.LoaderCache;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Writes a created container's aliases into its upper layer while no overlay is mounted over
 * it: each link renamed in on its own where the directory exists there, else the missing part
 * of the directory built complete under a temporary name and renamed into place in one step.
 */
final class UpperLayerWriter {

    private static final String ETC = "/etc";
    private static final String CACHE = "ld.so.cache";

    /**
     * Throws once Docker has begun to start the container. overlayfs forbids changing a layer
     * under a mounted overlay; Docker creates the {@code merged} directory just before it
     * mounts the root and removes it after unmounting, so while it is absent the upper layer
     * is nobody's but ours.
     */
    @FunctionalInterface
    interface NotStarted {
        void require() throws ErrnoException;
    }

    private final AliasPlanner planner;

    UpperLayerWriter(AliasPlanner planner) {
        this.planner = planner;
    }

    /**
     * The links of one library directory, written into the upper layer; what was written. The
     * SONAME aliases now right in it (written, or already there) are added to {@code right}, for
     * the loader cache.
     */
    List<LinkAction> seedDirectory(LayerStack layers, String path, List<DriverLibrary> libraries,
                                   NotStarted notStarted, List<LoaderCache.Entry> right) throws ErrnoException {
        Optional<MergedDirectory> merged = layers.directory(path);
        if (merged.isEmpty()) {
            return List.of();
        }
        try (MergedDirectory dir = merged.get()) {
            List<LinkAction> plan = planner.plan(path, libraries, LayerStack.listing(dir));
            List<LinkAction> changes = plan.stream().filter(a -> a.kind().changesSomething()).toList();
            List<LinkAction> written = changes.isEmpty() ? List.of() : write(layers, dir, changes, notStarted);
            for (LinkAction a : plan) {
                // SONAME aliases name a versioned file; development links are not cached.
                if ((a.kind() == ActionKind.KEEP || written.contains(a)) && FileNames.versionOf(a.target()).isPresent()) {
                    right.add(new LoaderCache.Entry(a.directory(), a.name(), a.target()));
                }
            }
            return written;
        }
    }

    private static List<LinkAction> write(LayerStack layers, MergedDirectory dir, List<LinkAction> changes,
                                          NotStarted notStarted) throws ErrnoException {
        List<MergedDirectory.Component> components = dir.components();
        int present = present(components);
        try (Directory parent = upperDirectory(layers, components.subList(0, present))) {
            if (present == components.size()) {
                return linkInPlace(parent, changes, notStarted);
            }
            buildAndMoveIn(parent, components.subList(present, components.size()), target -> {
                for (LinkAction action : changes) {
                    target.link(action.name(), action.target(), false);
                }
            }, changes.stream().map(LinkAction::name).toList(), notStarted);
            return changes;
        }
    }

    /**
     * The loader cache the container's layers show ({@code /etc/ld.so.cache} of the topmost
     * layer that has one), with {@code entries}, written into the upper layer's {@code /etc}
     * before the start: an entrypoint that asks {@code ldconfig -p} at its first instruction
     * finds what the links promise. A root without a cache gets none.
     */
    LoaderCache.Result seedLoaderCache(LayerStack layers, List<LoaderCache.Entry> entries, LoaderCache cache,
                                       NotStarted notStarted) throws ErrnoException {
        Optional<MergedDirectory> merged = layers.directory(ETC);
        if (merged.isEmpty() || entries.isEmpty()) {
            return LoaderCache.Result.NOT_CHECKED;
        }
        try (MergedDirectory etc = merged.get()) {
            Optional<ReadableFile> found = layers.file(etc, CACHE);
            if (found.isEmpty()) {
                return LoaderCache.Result.of(LoaderCache.Status.NO_CACHE);
            }
            try (ReadableFile current = found.get()) {
                List<MergedDirectory.Component> components = etc.components();
                int present = present(components);
                try (Directory parent = upperDirectory(layers, components.subList(0, present))) {
                    notStarted.require();
                    if (present == components.size()) {
                        return cache.seed(current, parent, entries);
                    }
                    LoaderCache.Result[] result = {LoaderCache.Result.NOT_CHECKED};
                    buildAndMoveIn(parent, components.subList(present, components.size()),
                            target -> result[0] = cache.seed(current, target, entries), List.of(CACHE), notStarted);
                    return result[0];
                }
            }
        }
    }

    /** How many leading components of a merged directory the upper layer holds already. */
    private static int present(List<MergedDirectory.Component> components) {
        int present = 0;
        while (present < components.size() && components.get(present).inUpper()) {
            present++;
        }
        return present;
    }

    /** The upper layer already has the directory: each link is renamed in on its own. */
    private static List<LinkAction> linkInPlace(Directory target, List<LinkAction> changes, NotStarted notStarted)
            throws ErrnoException {
        List<LinkAction> written = new ArrayList<>();
        for (LinkAction action : changes) {
            notStarted.require();
            // In the upper layer a stale link of a lower layer is simply shadowed.
            target.link(action.name(), action.target(), target.entry(action.name()).isPresent());
            if (target.readLink(action.name()).equals(action.target())) {
                written.add(action);
            }
        }
        return written;
    }

    /** What goes into a directory built in the upper layer before it is moved into place. */
    @FunctionalInterface
    private interface Fill {
        void into(Directory target) throws ErrnoException;
    }

    /**
     * The upper layer lacks (part of) a directory: the missing part is built complete, with its
     * owners and modes, and filled (links, a cache), under a random name, then renamed into place
     * in one step, right after checking once more that the runtime has not begun to mount the
     * container's root. Overlayfs thus never sees a half-made directory, nor one with the wrong mode.
     *
     * @param filled the names {@code fill} makes in the last directory, removed if this fails
     */
    private static void buildAndMoveIn(Directory parent, List<MergedDirectory.Component> missing, Fill fill,
                                       List<String> filled, NotStarted notStarted) throws ErrnoException {
        MergedDirectory.Component first = missing.getFirst();
        String temporary = RootFs.temporaryName(first.name());
        List<Directory> built = new ArrayList<>();
        boolean moved = false;
        try {
            built.add(parent.makeDirectory(temporary, first.stat().uid(), first.stat().gid(), first.stat().permissions()));
            for (MergedDirectory.Component c : missing.subList(1, missing.size())) {
                built.add(built.getLast().makeDirectory(c.name(), c.stat().uid(), c.stat().gid(), c.stat().permissions()));
            }
            fill.into(built.getLast());
            notStarted.require();
            parent.renameNoReplace(temporary, first.name());
            moved = true;
        } finally {
            if (!moved) {
                takeBack(parent, temporary, built, missing, filled);
            }
            built.forEach(Directory::close);
        }
    }

    /** Removes a half-built directory that never became visible under its real name. */
    private static void takeBack(Directory parent, String temporary, List<Directory> built,
                                 List<MergedDirectory.Component> missing, List<String> filled) {
        if (built.size() == missing.size()) {
            for (String name : filled) {
                quietly(() -> built.getLast().remove(name, false));
            }
        }
        for (int i = built.size() - 1; i >= 1; i--) {
            Directory holder = built.get(i - 1);
            String name = missing.get(i).name();
            quietly(() -> holder.remove(name, true));
        }
        quietly(() -> parent.remove(temporary, true));
    }

    @FunctionalInterface
    private interface Step {
        void run() throws ErrnoException;
    }

    private static void quietly(Step step) {
        try {
            step.run();
        } catch (ErrnoException ignored) {
            // Best effort: the name is already gone, or the layer went away with the container.
        }
    }

    /** The upper-layer directories that exist along the path: real directories, never followed. */
    private static Directory upperDirectory(LayerStack layers, List<MergedDirectory.Component> present)
            throws ErrnoException {
        Directory current = layers.upper().openDirectory("/", true);
        try {
            for (MergedDirectory.Component c : present) {
                Directory next = current.subdirectory(c.name());
                current.close();
                current = next;
            }
            return current;
        } catch (ErrnoException e) {
            current.close();
            throw e;
        }
    }
}
