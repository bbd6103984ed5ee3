package io.driveralias.agent.mount;

import java.util.List;
import java.util.Objects;

/**
 * One line of {@code /proc/<pid>/mountinfo} (see proc(5)).
 *
 * <p>{@code root}, {@code mountPoint}, {@code fsType} and {@code source} are unescaped: each
 * char is one raw byte (ISO-8859-1), because paths are bytes and the rest of the agent encodes
 * them back the same way. {@code options} and {@code superOptions} are kept exactly as the
 * kernel printed them: an escaped comma inside an option value must stay distinguishable from
 * the comma that separates options.
 */
public record MountEntry(
        int mountId,
        int parentId,
        int major,
        int minor,
        String root,
        String mountPoint,
        String options,
        List<String> optionalFields,
        String fsType,
        String source,
        String superOptions) {

    public MountEntry {
        Objects.requireNonNull(root, "root");
        Objects.requireNonNull(mountPoint, "mountPoint");
        Objects.requireNonNull(options, "options");
        optionalFields = List.copyOf(optionalFields);
        Objects.requireNonNull(fsType, "fsType");
        Objects.requireNonNull(source, "source");
        Objects.requireNonNull(superOptions, "superOptions");
    }
}
