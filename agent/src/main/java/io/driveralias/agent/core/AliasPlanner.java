package io.driveralias.agent.core;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Decides, for one directory, which SONAME aliases (and optionally development links) must be
 * created, replaced, kept or left alone. Pure: everything it knows comes in as arguments.
 */
public final class AliasPlanner {

    private final boolean devLinks;

    public AliasPlanner(boolean devLinks) {
        this.devLinks = devLinks;
    }

    /**
     * @param directory the directory inside the root, e.g. {@code /usr/lib/x86_64-linux-gnu}
     * @param libraries the driver files of that directory, with their SONAMEs
     * @param listing   what is at each name of that directory right now
     */
    public List<LinkAction> plan(String directory, List<DriverLibrary> libraries, DirectoryListing listing) {
        List<DriverLibrary> sorted = new ArrayList<>(libraries);
        sorted.sort(Comparator.comparing(DriverLibrary::fileName));
        List<LinkAction> actions = new ArrayList<>();
        Set<String> claimed = new HashSet<>();
        for (DriverLibrary lib : sorted) {
            if (!lib.directory().equals(directory)) {
                throw new IllegalArgumentException(lib.fileName() + " is not in " + directory);
            }
            if (lib.soname().equals(lib.fileName())) {
                actions.add(new LinkAction(ActionKind.SKIP, directory, lib.soname(), lib.fileName(),
                        "SONAME is the file name"));
                continue;
            }
            actions.add(claim(claimed, directory, lib.soname(), lib.fileName(), listing));
        }
        if (devLinks) {
            for (DriverLibrary lib : sorted) {
                String dev = lib.devLinkName();
                // Internal libraries (SONAME == file name) are never linked against by name.
                if (dev == null || lib.soname().equals(lib.fileName()) || dev.equals(lib.soname())) {
                    continue;
                }
                actions.add(claim(claimed, directory, dev, lib.soname(), listing));
            }
        }
        return List.copyOf(actions);
    }

    private static LinkAction claim(Set<String> claimed, String directory, String name, String target,
                                    DirectoryListing listing) {
        if (!claimed.add(name)) {
            return new LinkAction(ActionKind.CONFLICT, directory, name, target,
                    "another driver file of this version claims the same name");
        }
        return decide(directory, name, target, listing);
    }

    private static LinkAction decide(String directory, String name, String target, DirectoryListing listing) {
        Optional<DirEntry> existing = listing.find(name);
        if (existing.isEmpty()) {
            return new LinkAction(ActionKind.CREATE, directory, name, target, "missing");
        }
        DirEntry entry = existing.get();
        return switch (entry.kind()) {
            case SYMLINK -> pointsAt(entry.linkTarget(), directory, target)
                    ? new LinkAction(ActionKind.KEEP, directory, name, target, "")
                    : new LinkAction(ActionKind.REPLACE, directory, name, target,
                            staleness(entry.linkTarget(), listing));
            case REGULAR_FILE -> new LinkAction(ActionKind.CONFLICT, directory, name, target,
                    "a regular file holds the alias name");
            case DIRECTORY -> new LinkAction(ActionKind.CONFLICT, directory, name, target,
                    "a directory holds the alias name");
            case OTHER -> new LinkAction(ActionKind.CONFLICT, directory, name, target,
                    "a special file holds the alias name");
        };
    }

    /** The link is right if it names the target in the same directory, relatively or absolutely. */
    private static boolean pointsAt(String linkText, String directory, String target) {
        if (linkText.equals(target) || linkText.equals("./" + target)) {
            return true;
        }
        String dir = directory.endsWith("/") ? directory : directory + "/";
        return linkText.equals(dir + target);
    }

    private static String staleness(String linkText, DirectoryListing listing) {
        if (FileNames.isPlainName(linkText) && listing.find(linkText).isEmpty()) {
            return "dangling: " + linkText;
        }
        return "points to " + linkText;
    }
}
