package io.driveralias.agent.overlay;

import io.driveralias.agent.core.AliasPlanner;
import io.driveralias.agent.core.DriverLibrary;
import io.driveralias.agent.core.LinkAction;
import io.driveralias.agent.fs.Directory;
import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.fs.RootFs;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Writes a created container's aliases into its upper layer while no overlay is mounted over
 * it: each link renamed in on its own where the directory exists there, else the missing part
 * of the directory built complete under a temporary name and renamed into place in one step.
 */
final class UpperLayerWriter {

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

    /** The links of one library directory, written into the upper layer; what was written. */
    List<LinkAction> seedDirectory(LayerStack layers, String path, List<DriverLibrary> libraries,
                                   NotStarted notStarted) throws ErrnoException {
        Optional<MergedDirectory> merged = layers.directory(path);
        if (merged.isEmpty()) {
            return List.of();
        }
        try (MergedDirectory dir = merged.get()) {
            List<LinkAction> changes = planner.plan(path, libraries, LayerStack.listing(dir)).stream()
                    .filter(a -> a.kind().changesSomething()).toList();
            if (changes.isEmpty()) {
                return List.of();
            }
            List<MergedDirectory.Component> components = dir.components();
            int present = 0;
            while (present < components.size() && components.get(present).inUpper()) {
                present++;
            }
            try (Directory parent = upperDirectory(layers, components.subList(0, present))) {
                return present == components.size()
                        ? linkInPlace(parent, changes, notStarted)
                        : buildAndMoveIn(parent, components.subList(present, components.size()), changes, notStarted);
            }
        }
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

    /**
     * The upper layer lacks (part of) the directory: the missing part is built complete, with
     * its owners, modes and links, under a random name, then renamed into place in one step,
     * right after checking once more that Docker has not begun to mount the container's root.
     * Overlayfs thus never sees a half-made directory, nor one with the wrong mode.
     */
    private static List<LinkAction> buildAndMoveIn(Directory parent, List<MergedDirectory.Component> missing,
                                                   List<LinkAction> changes, NotStarted notStarted)
            throws ErrnoException {
        MergedDirectory.Component first = missing.getFirst();
        String temporary = RootFs.temporaryName(first.name());
        List<Directory> built = new ArrayList<>();
        boolean moved = false;
        try {
            built.add(parent.makeDirectory(temporary, first.stat().uid(), first.stat().gid(), first.stat().permissions()));
            for (MergedDirectory.Component c : missing.subList(1, missing.size())) {
                built.add(built.getLast().makeDirectory(c.name(), c.stat().uid(), c.stat().gid(), c.stat().permissions()));
            }
            for (LinkAction action : changes) {
                built.getLast().link(action.name(), action.target(), false);
            }
            notStarted.require();
            parent.renameNoReplace(temporary, first.name());
            moved = true;
            return changes;
        } finally {
            if (!moved) {
                takeBack(parent, temporary, built, missing, changes);
            }
            built.forEach(Directory::close);
        }
    }

    /** Removes a half-built directory that never became visible under its real name. */
    private static void takeBack(Directory parent, String temporary, List<Directory> built,
                                 List<MergedDirectory.Component> missing, List<LinkAction> changes) {
        if (built.size() == missing.size()) {
            for (LinkAction action : changes) {
                quietly(() -> built.getLast().remove(action.name(), false));
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
