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
            if (!sameLibrary(lib.soname(), lib.fileName())) {
                // A file may only name an alias of its own library: a hostile file whose SONAME
                // is libc.so.6 or ld-linux-x86-64.so.2 must not redirect the image's loader.
                actions.add(new LinkAction(ActionKind.SKIP, directory, lib.soname(), lib.fileName(),
                        "SONAME names another library"));
                continue;
            }
            actions.add(claim(claimed, directory, lib.soname(), lib.fileName(), listing));
        }
        if (devLinks) {
            for (DriverLibrary lib : sorted) {
                String dev = lib.devLinkName();
                // Internal libraries (SONAME == file name) are never linked against by name.
                if (dev == null || lib.soname().equals(lib.fileName()) || dev.equals(lib.soname())
                        || !sameLibrary(lib.soname(), lib.fileName())) {
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
            case SYMLINK -> symlink(directory, name, target, entry.linkTarget(), listing);
            case REGULAR_FILE -> new LinkAction(ActionKind.CONFLICT, directory, name, target,
                    "a regular file holds the alias name");
            case DIRECTORY -> new LinkAction(ActionKind.CONFLICT, directory, name, target,
                    "a directory holds the alias name");
            case OTHER -> new LinkAction(ActionKind.CONFLICT, directory, name, target,
                    "a special file holds the alias name");
        };
    }

    /**
     * Only links that can be ours are replaced: one that dangles inside this directory, or one
     * that names another version of the same driver library here (a driver version, such as
     * 470.57.02: {@code libcuda.so.1.1} or {@code libz.so.1.2.13} are not the driver's). Anything
     * else (a link into CUDA's forward-compatibility directory, the image's own loader link, a
     * link to any other existing file) is the image's choice: a conflict, reported and left alone.
     */
    private static LinkAction symlink(String directory, String name, String target, String linkText,
                                      DirectoryListing listing) {
        Optional<String> sibling = siblingName(linkText, directory);
        if (sibling.isPresent() && sibling.get().equals(target)) {
            return new LinkAction(ActionKind.KEEP, directory, name, target, "");
        }
        // A link to itself loops: it dangles as surely as one to a missing name.
        if (sibling.isPresent() && (sibling.get().equals(name) || listing.find(sibling.get()).isEmpty())) {
            return new LinkAction(ActionKind.REPLACE, directory, name, target, "dangling: " + Printable.of(linkText));
        }
        if (sibling.isPresent() && FileNames.hasDriverVersion(sibling.get()) && sameLibrary(sibling.get(), target)) {
            return new LinkAction(ActionKind.REPLACE, directory, name, target, "points to " + Printable.of(linkText));
        }
        return new LinkAction(ActionKind.CONFLICT, directory, name, target,
                "a link the agent did not make holds the alias name (points to " + Printable.of(linkText) + ")");
    }

    /** The name a link text means in {@code directory} itself (relative, {@code ./}, or absolute), if any. */
    private static Optional<String> siblingName(String linkText, String directory) {
        String name = linkText.startsWith("./") ? linkText.substring(2) : linkText;
        String dir = directory.endsWith("/") ? directory : directory + "/";
        if (name.startsWith(dir)) {
            name = name.substring(dir.length());
        }
        return FileNames.isPlainName(name) ? Optional.of(name) : Optional.empty();
    }

    private static boolean sameLibrary(String a, String b) {
        Optional<String> stem = FileNames.libraryStem(a);
        return stem.isPresent() && stem.equals(FileNames.libraryStem(b));
    }
}
