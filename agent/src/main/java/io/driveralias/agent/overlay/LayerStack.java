package io.driveralias.agent.overlay;

import io.driveralias.agent.core.DirEntry;
import io.driveralias.agent.core.DirectoryListing;
import io.driveralias.agent.fs.Directory;
import io.driveralias.agent.fs.Errno;
import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.fs.FileStat;
import io.driveralias.agent.fs.PathResolver;
import io.driveralias.agent.fs.ReadableFile;
import io.driveralias.agent.fs.RootFs;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * The layers of a container that has not started yet, read the way overlayfs will merge them:
 * layer 0 is the writable upper dir, then the image's layers from top to bottom. A name is
 * hidden by a whiteout (a 0:0 character device, or an AUFS-style {@code .wh.<name>}) in a
 * higher layer; an opaque directory (xattr {@code trusted.overlay.opaque=y}, or
 * {@code .wh..wh..opq}) hides everything below it; a non-directory ends the stack for its
 * path. Nothing is followed: a symlink in any layer is an answer, not a way through.
 */
public final class LayerStack implements AutoCloseable {

    private static final String WHITEOUT_PREFIX = ".wh.";
    private static final String OPAQUE_MARKER = ".wh..wh..opq";
    private static final List<String> OPAQUE_XATTRS = List.of("trusted.overlay.opaque", "user.overlay.opaque");

    private final List<RootFs> layers;

    private LayerStack(List<RootFs> layers) {
        this.layers = layers;
    }

    /** Opens the upper dir and the lower dirs (Docker's {@code LowerDir}, top first, ':'-separated). */
    public static LayerStack open(String upperDir, String lowerDirs, PathResolver resolver) throws ErrnoException {
        List<RootFs> opened = new ArrayList<>();
        try {
            opened.add(RootFs.openHostDirectory(upperDir, resolver));
            for (String lower : lowerDirs.split(":")) {
                if (!lower.isEmpty()) {
                    opened.add(RootFs.openHostDirectory(lower, resolver));
                }
            }
            return new LayerStack(opened);
        } catch (ErrnoException e) {
            opened.forEach(RootFs::close);
            throw e;
        }
    }

    public RootFs upper() {
        return layers.getFirst();
    }

    /**
     * A directory of the merged view, with each component's attributes from the topmost
     * layer that holds it; empty if some component is missing, whited out, or not a real
     * directory (a symlink such as {@code /lib64 -> usr/lib64} must stay what it is).
     */
    public Optional<MergedDirectory> directory(String path) throws ErrnoException {
        List<String> components = Arrays.stream(path.split("/")).filter(c -> !c.isEmpty()).toList();
        Directory[] current = new Directory[layers.size()];
        List<MergedDirectory.Component> found = new ArrayList<>();
        int floor = layers.size();
        try {
            for (int i = 0; i < layers.size(); i++) {
                current[i] = layers.get(i).openDirectory("/", false);
            }
            for (String name : components) {
                Level level = lookup(current, floor, name);
                if (level == null || !level.stat().isDirectory()) {
                    return Optional.empty();
                }
                floor = level.floor();
                Directory[] next = new Directory[layers.size()];
                for (int i = level.top(); i < floor; i++) {
                    next[i] = subdirectoryOrNull(current[i], name);
                }
                closeAll(current);
                current = next;
                found.add(new MergedDirectory.Component(name, level.stat(), current[0] != null));
            }
            MergedDirectory merged = new MergedDirectory(path, found, current, floor);
            current = null;
            return Optional.of(merged);
        } finally {
            if (current != null) {
                closeAll(current);
            }
        }
    }

    /**
     * The file {@code name} of a merged directory as the merged view will show it: the topmost
     * layer's entry, opened for reading if it is a regular file; empty if it is absent, whited
     * out, or anything but a regular file.
     */
    public Optional<ReadableFile> file(MergedDirectory dir, String name) throws ErrnoException {
        Directory[] dirs = dir.layerDirectories();
        Level level = lookup(dirs, dir.floor(), name);
        if (level == null || !level.stat().isRegularFile()) {
            return Optional.empty();
        }
        return Optional.of(dirs[level.top()].openFile(name));
    }

    /** The topmost entry for {@code name}, and how far down the stack its directory merges. */
    private record Level(int top, FileStat stat, int floor) {
    }

    static Level lookup(Directory[] dirs, int floor, String name) throws ErrnoException {
        for (int i = 0; i < floor; i++) {
            if (dirs[i] == null) {
                continue;
            }
            if (dirs[i].entry(WHITEOUT_PREFIX + name).isPresent()) {
                return null;
            }
            Optional<FileStat> stat = statOrEmpty(dirs[i], name);
            if (stat.isEmpty()) {
                continue;
            }
            if (stat.get().isWhiteout()) {
                return null;
            }
            if (!stat.get().isDirectory()) {
                return new Level(i, stat.get(), i + 1);
            }
            return new Level(i, stat.get(), mergeFloor(dirs, i, floor, name));
        }
        return null;
    }

    /**
     * How far down a directory found in layer {@code top} merges: to the first layer whose
     * copy is opaque (inclusive), or the first layer holding a non-directory or whiteout
     * under that name (exclusive).
     */
    private static int mergeFloor(Directory[] dirs, int top, int floor, String name) throws ErrnoException {
        for (int i = top; i < floor; i++) {
            if (dirs[i] == null) {
                continue;
            }
            if (i > top && dirs[i].entry(WHITEOUT_PREFIX + name).isPresent()) {
                return i;
            }
            Optional<FileStat> stat = statOrEmpty(dirs[i], name);
            if (stat.isEmpty()) {
                continue;
            }
            if (!stat.get().isDirectory()) {
                return i;
            }
            Directory sub = subdirectoryOrNull(dirs[i], name);
            boolean opaque = sub != null && isOpaque(sub);
            if (sub != null) {
                sub.close();
            }
            if (opaque) {
                return i + 1;
            }
        }
        return floor;
    }

    static boolean isOpaque(Directory dir) throws ErrnoException {
        if (dir.entry(OPAQUE_MARKER).isPresent()) {
            return true;
        }
        for (String xattr : OPAQUE_XATTRS) {
            Optional<byte[]> value = dir.xattr(xattr);
            if (value.isPresent() && value.get().length > 0 && value.get()[0] == 'y') {
                return true;
            }
        }
        return false;
    }

    static Optional<FileStat> statOrEmpty(Directory dir, String name) throws ErrnoException {
        try {
            return Optional.of(dir.statEntry(name));
        } catch (ErrnoException e) {
            if (e.is(Errno.ENOENT)) {
                return Optional.empty();
            }
            throw e;
        }
    }

    private static Directory subdirectoryOrNull(Directory parent, String name) throws ErrnoException {
        if (parent == null) {
            return null;
        }
        try {
            return parent.subdirectory(name);
        } catch (ErrnoException e) {
            if (e.is(Errno.ENOENT) || e.is(Errno.ENOTDIR) || e.is(Errno.ELOOP)) {
                return null;
            }
            throw e;
        }
    }

    static void closeAll(Directory[] dirs) {
        for (Directory d : dirs) {
            if (d != null) {
                d.close();
            }
        }
    }

    /** What the merged view holds at {@code name} in an open merged directory, for the planner. */
    static DirectoryListing listing(MergedDirectory dir) {
        return name -> {
            try {
                Level level = lookup(dir.layerDirectories(), dir.floor(), name);
                if (level == null) {
                    return Optional.empty();
                }
                Directory top = dir.layerDirectories()[level.top()];
                return top.entry(name);
            } catch (ErrnoException e) {
                return Optional.of(DirEntry.other(name));
            }
        };
    }

    @Override
    public void close() {
        layers.forEach(RootFs::close);
    }
}
