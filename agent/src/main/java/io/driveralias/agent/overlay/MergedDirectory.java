package io.driveralias.agent.overlay;

import io.driveralias.agent.fs.Directory;
import io.driveralias.agent.fs.FileStat;
import java.util.List;

/**
 * A directory as the merged view of a {@link LayerStack} will show it: each path component
 * with the attributes of its topmost copy, and the open copies of the directory itself, one
 * per layer that contributes to it (null where a layer has none).
 */
public final class MergedDirectory implements AutoCloseable {

    /** One path component: its name, the topmost copy's stat, and whether the upper dir has it. */
    public record Component(String name, FileStat stat, boolean inUpper) {
    }

    private final String path;
    private final List<Component> components;
    private final Directory[] layerDirectories;
    private final int floor;

    MergedDirectory(String path, List<Component> components, Directory[] layerDirectories, int floor) {
        this.path = path;
        this.components = List.copyOf(components);
        this.layerDirectories = layerDirectories;
        this.floor = floor;
    }

    public String path() {
        return path;
    }

    public List<Component> components() {
        return components;
    }

    Directory[] layerDirectories() {
        return layerDirectories;
    }

    int floor() {
        return floor;
    }

    @Override
    public void close() {
        LayerStack.closeAll(layerDirectories);
    }
}
