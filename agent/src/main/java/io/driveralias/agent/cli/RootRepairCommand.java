package io.driveralias.agent.cli;

import io.driveralias.agent.config.AgentConfig;
import io.driveralias.agent.core.AliasPlanner;
import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.fs.HostRoot;
import io.driveralias.agent.fs.PathResolver;
import io.driveralias.agent.fs.RootFs;
import io.driveralias.agent.repair.DriverLocator;
import io.driveralias.agent.repair.HostDriverFiles;
import io.driveralias.agent.repair.LoaderCache;
import io.driveralias.agent.repair.LocateRequest;
import io.driveralias.agent.repair.RepairReport;
import io.driveralias.agent.repair.RootRepairer;
import io.driveralias.agent.repair.SonameCache;
import java.io.PrintStream;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * {@code repair --root DIR} and {@code check --root DIR}: one unpacked root filesystem, no Docker.
 * {@code check} reports (missing aliases as missing) and changes nothing, with {@code check}'s exit
 * codes: 0 when the root is healthy, 1 otherwise.
 */
public final class RootRepairCommand {

    private final AgentConfig config;
    private final LoaderCache loaderCache;
    private final PrintStream out;
    private final PrintStream err;

    public RootRepairCommand(AgentConfig config, LoaderCache loaderCache, PrintStream out, PrintStream err) {
        this.loaderCache = loaderCache;
        this.config = config;
        this.out = out;
        this.err = err;
    }

    public int run() {
        String rootPath = config.root().orElseThrow();
        PathResolver resolver = PathResolver.detect(config.forceWalkResolver());
        boolean check = config.command() == AgentConfig.Command.CHECK;
        HostRoot host = new HostRoot("/proc", resolver);
        // The root's own files count (LocateRequest.of): the host's are never asked for.
        RootRepairer repairer = new RootRepairer(new DriverLocator(new SonameCache(256), host,
                new HostDriverFiles(host, List.of(), Optional.empty())), new AliasPlanner(config.devLinks()), loaderCache);
        RepairReport report;
        try (RootFs root = RootFs.openHostDirectory(rootPath, resolver)) {
            report = repairer.repair(root, LocateRequest.of(config.libraryDirectories(), config.driverVersion()),
                    check || config.dryRun() ? RootRepairer.Mode.DRY_RUN : RootRepairer.Mode.APPLY);
        } catch (ErrnoException e) {
            err.println("driver-alias-agent: cannot open root " + rootPath + ": " + e.getMessage());
            return ExitCodes.USAGE;
        }
        ReportPrinter printer = new ReportPrinter(out, check);
        if (config.json()) {
            printer.json(ReportPrinter.toMap(report, Map.of("root", rootPath, "resolver", resolver.name())));
        } else {
            printer.text(report);
        }
        return report.healthy() ? ExitCodes.HEALTHY : ExitCodes.UNREPAIRED;
    }
}
