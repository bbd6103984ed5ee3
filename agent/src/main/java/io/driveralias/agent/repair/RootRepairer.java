package io.driveralias.agent.repair;

import io.driveralias.agent.core.ActionKind;
import io.driveralias.agent.core.AliasPlanner;
import io.driveralias.agent.core.DriverLibrary;
import io.driveralias.agent.core.EntryKind;
import io.driveralias.agent.core.FileNames;
import io.driveralias.agent.core.FailureReason;
import io.driveralias.agent.core.LinkAction;
import io.driveralias.agent.fs.Directory;
import io.driveralias.agent.fs.Errno;
import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.fs.FileStat;
import io.driveralias.agent.fs.RootFs;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Locate, plan, apply, verify: the whole repair of one root filesystem. Used by
 * {@code repair --root} and, with a container's root fd, by the live agent.
 */
public final class RootRepairer {

    static final String LD_SO_CACHE = "/etc/ld.so.cache";

    public enum Mode {
        /** Create and replace links. */
        APPLY,
        /** Report what would be done (and, for {@code check}, what is missing). */
        DRY_RUN
    }

    private final DriverLocator locator;
    private final AliasPlanner planner;
    private final LoaderCache loaderCache;

    public RootRepairer(DriverLocator locator, AliasPlanner planner) {
        this(locator, planner, LoaderCache.OFF);
    }

    public RootRepairer(DriverLocator locator, AliasPlanner planner, LoaderCache loaderCache) {
        this.locator = locator;
        this.planner = planner;
        this.loaderCache = loaderCache;
    }

    /** Throws only ESRCH (the container is gone); every other failure is in the report. */
    public RepairReport repair(RootFs root, LocateRequest request, Mode mode) throws ErrnoException {
        DriverInventory inventory = locator.locate(root, request);
        List<LinkResult> results = new ArrayList<>();
        List<Problem> problems = new ArrayList<>(inventory.problems());
        for (Map.Entry<String, List<LocatedLibrary>> entry : inventory.byDirectory().entrySet()) {
            try {
                results.addAll(repairDirectory(root, entry.getKey(), entry.getValue(), mode));
            } catch (ErrnoException e) {
                if (e.is(Errno.ESRCH)) {
                    throw e;
                }
                problems.add(new Problem(entry.getKey(), Failures.reasonOf(e), e.getMessage()));
            }
        }
        if (mode == Mode.APPLY) {
            inventory.leftovers().forEach((dir, names) -> removeLeftovers(root, dir, names));
        }
        LoaderCache.Status cache = refreshCache(root, results, problems, mode);
        List<DriverLibrary> files = inventory.byDirectory().values().stream().flatMap(List::stream)
                .map(LocatedLibrary::library).toList();
        return new RepairReport(inventory.driverVersion(), results, problems, cache, files);
    }

    /**
     * Lists every SONAME alias now right (verified, or planned in a dry run) in the root's
     * loader cache. An alias that failed is not advertised; the retry that fixes it lists it.
     */
    private LoaderCache.Status refreshCache(RootFs root, List<LinkResult> results, List<Problem> problems, Mode mode) {
        List<LoaderCache.Entry> entries = new ArrayList<>();
        for (LinkResult r : results) {
            LinkAction a = r.action();
            boolean right = r.status() == LinkStatus.APPLIED || r.status() == LinkStatus.PLANNED
                    || (r.status() == LinkStatus.UNCHANGED && a.kind() == ActionKind.KEEP);
            // SONAME aliases name a versioned file; development links (libcuda.so) are not cached.
            if (right && FileNames.versionOf(a.target()).isPresent()) {
                entries.add(new LoaderCache.Entry(a.directory(), a.name(), a.target()));
            }
        }
        if (entries.isEmpty()) {
            return LoaderCache.Status.NOT_CHECKED;
        }
        LoaderCache.Result result = loaderCache.refresh(root, entries, mode == Mode.APPLY);
        result.reason().ifPresent(reason -> problems.add(new Problem(LD_SO_CACHE, reason, result.message())));
        return result.status();
    }

    /**
     * Temporary links of the agent's own pattern, left by an agent killed between creating one
     * and renaming it over an alias. Removed only if still a symlink; a failure changes nothing.
     */
    private static void removeLeftovers(RootFs root, String path, Set<String> names) {
        try (Directory dir = root.openDirectory(path, true)) {
            for (String name : names) {
                if (dir.entry(name).map(e -> e.kind() == EntryKind.SYMLINK).orElse(false)) {
                    dir.remove(name, false);
                }
            }
        } catch (ErrnoException e) {
            // Litter, not harm: the next repair tries again.
        }
    }

    private List<LinkResult> repairDirectory(RootFs root, String path, List<LocatedLibrary> libraries, Mode mode)
            throws ErrnoException {
        List<LinkAction> actions;
        FileStat identity;
        try (Directory dir = root.openDirectory(path, false)) {
            identity = dir.stat();
            actions = planner.plan(path, libraries.stream().map(LocatedLibrary::library).toList(), dir.listing());
        }
        List<LinkResult> results = new ArrayList<>();
        List<LinkAction> changes = new ArrayList<>();
        for (LinkAction action : actions) {
            switch (action.kind()) {
                case CREATE, REPLACE -> {
                    if (mode == Mode.APPLY) {
                        changes.add(action);
                    } else {
                        results.add(LinkResult.of(action, LinkStatus.PLANNED));
                    }
                }
                case CONFLICT -> results.add(LinkResult.failed(action, FailureReason.CONFLICT, action.detail()));
                case KEEP, SKIP -> results.add(LinkResult.of(action, LinkStatus.UNCHANGED));
            }
        }
        results.addAll(apply(root, path, identity, changes));
        try (Directory dir = root.openDirectory(path, false)) {
            return verify(root, dir, results, expectedFiles(actions, libraries));
        }
    }

    private static List<LinkResult> apply(RootFs root, String path, FileStat identity, List<LinkAction> changes) {
        if (changes.isEmpty()) {
            return List.of();
        }
        List<LinkResult> results = new ArrayList<>();
        try (Directory dir = root.openDirectory(path, true)) {
            if (!dir.stat().sameFile(identity)) {
                throw new ErrnoException("open", path + " (swapped since it was planned)", Errno.EAGAIN);
            }
            for (LinkAction action : changes) {
                try {
                    dir.link(action.name(), action.target(), action.kind() == ActionKind.REPLACE);
                    results.add(LinkResult.of(action, LinkStatus.APPLIED));
                } catch (ErrnoException e) {
                    results.add(LinkResult.failed(action, Failures.reasonOf(e), Failures.linkFailure(path, e)));
                }
            }
        } catch (ErrnoException e) {
            String message = e.is(Errno.EXDEV)
                    ? path + " is a mount point (a directory mounted from the host?): not written"
                    : e.getMessage();
            for (LinkAction action : changes) {
                results.add(LinkResult.failed(action, Failures.reasonOf(e), message));
            }
        }
        return results;
    }

    /**
     * Every planned alias name, mapped to the driver file it must reach once followed: the file
     * its own target names, or, for a development link, the file its SONAME alias names. Taken
     * from the plan itself, so verification expects exactly what the planner chose.
     */
    private static Map<String, FileStat> expectedFiles(List<LinkAction> actions, List<LocatedLibrary> libraries) {
        Map<String, FileStat> byFile = new HashMap<>();
        libraries.forEach(l -> byFile.put(l.library().fileName(), l.stat()));
        Map<String, String> targetOf = new HashMap<>();
        actions.stream().filter(a -> a.kind() != ActionKind.CONFLICT && a.kind() != ActionKind.SKIP)
                .forEach(a -> targetOf.putIfAbsent(a.name(), a.target()));
        Map<String, FileStat> expected = new HashMap<>();
        targetOf.forEach((name, target) -> {
            FileStat file = byFile.getOrDefault(target, byFile.get(targetOf.get(target)));
            if (file != null) {
                expected.put(name, file);
            }
        });
        return expected;
    }

    /**
     * Reads back every link that should now be right: its text, and, resolved inside the
     * root, the driver file it reaches. A link that does not pass is a failure.
     */
    private static List<LinkResult> verify(RootFs root, Directory dir, List<LinkResult> results,
                                           Map<String, FileStat> expected) {
        List<LinkResult> verified = new ArrayList<>(results.size());
        for (LinkResult result : results) {
            LinkAction action = result.action();
            boolean check = result.status() == LinkStatus.APPLIED
                    || (result.status() == LinkStatus.UNCHANGED && action.kind() == ActionKind.KEEP);
            if (!check) {
                verified.add(result);
                continue;
            }
            String problem = verifyOne(root, dir, action, expected.get(action.name()));
            verified.add(problem == null ? result
                    : LinkResult.failed(action, FailureReason.IO, "verification failed: " + problem));
        }
        return verified;
    }

    private static String verifyOne(RootFs root, Directory dir, LinkAction action, FileStat expected) {
        try {
            String text = dir.readLink(action.name());
            if (!text.equals(action.target()) && action.kind() != ActionKind.KEEP) {
                return "link reads " + text;
            }
            FileStat reached = root.stat(action.path(), true);
            if (expected != null && !reached.sameFile(expected)) {
                return "link does not reach " + action.target();
            }
            return null;
        } catch (ErrnoException e) {
            return e.getMessage();
        }
    }
}
