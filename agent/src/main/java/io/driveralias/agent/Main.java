package io.driveralias.agent;

import io.driveralias.agent.cli.ContainersCommand;
import io.driveralias.agent.cli.ExitCodes;
import io.driveralias.agent.cli.RootRepairCommand;
import io.driveralias.agent.config.AgentConfig;
import io.driveralias.agent.config.ConfigException;
import io.driveralias.agent.config.ConfigParser;
import io.driveralias.agent.core.AliasPlanner;
import io.driveralias.agent.core.ContainerScope;
import io.driveralias.agent.core.DriverVersions;
import io.driveralias.agent.docker.DockerEngine;
import io.driveralias.agent.live.Docker;
import io.driveralias.agent.live.DockerEvents;
import io.driveralias.agent.fs.HostRoot;
import io.driveralias.agent.fs.PathResolver;
import io.driveralias.agent.http.AgentHttpServer;
import io.driveralias.agent.webconfig.WebSecurity;
import io.driveralias.agent.kube.PodEvents;
import io.driveralias.agent.kube.PodEventsFactory;
import io.driveralias.agent.live.Agent;
import io.driveralias.agent.live.ContainerRepairer;
import io.driveralias.agent.live.RuntimeFileSets;
import io.driveralias.agent.live.ContainerRoots;
import io.driveralias.agent.live.ExaminationReporter;
import io.driveralias.agent.logging.LogSetup;
import io.driveralias.agent.metrics.MicrometerRepairMetrics;
import io.driveralias.agent.metrics.RepairMetrics;
import io.driveralias.agent.overlay.CreateTimeSeeder;
import io.driveralias.agent.repair.DriverLocator;
import io.driveralias.agent.repair.LoaderCache;
import io.driveralias.agent.ldcache.LdSoCache;
import io.driveralias.agent.repair.RootRepairer;
import io.driveralias.agent.repair.SonameCache;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Composition root: parse the configuration, build the parts, run the command. Nothing else. */
public final class Main {

    private Main() {
    }

    public static void main(String[] args) {
        System.exit(run(List.of(args), System.getenv(), System.out, System.err));
    }

    static int run(List<String> args, Map<String, String> env, PrintStream out, PrintStream err) {
        if (args.contains("--help") || args.contains("-h")) {
            out.print(ConfigParser.usage());
            return ExitCodes.HEALTHY;
        }
        if (args.contains("--version")) {
            out.println("driver-alias-agent " + ConfigParser.version());
            return ExitCodes.HEALTHY;
        }
        AgentConfig config;
        try {
            config = ConfigParser.parse(args, env);
        } catch (ConfigException e) {
            err.println("driver-alias-agent: " + e.getMessage());
            return ExitCodes.USAGE;
        }
        LogSetup.configure(config.logFormat(), config.logLevel());
        if (config.root().isPresent()) {
            return new RootRepairCommand(config, loaderCache(config), out, err).run();
        }
        return switch (config.command()) {
            case RUN -> runAgent(config);
            case CHECK -> runOnce(config, RootRepairer.Mode.DRY_RUN, true, out, err);
            case REPAIR -> runOnce(config, config.dryRun() ? RootRepairer.Mode.DRY_RUN : RootRepairer.Mode.APPLY, false,
                    out, err);
        };
    }

    private static int runOnce(AgentConfig config, RootRepairer.Mode mode, boolean checkOnly, PrintStream out,
                               PrintStream err) {
        try (Docker docker = DockerEngine.create(config.dockerHost(), config.dockerApiVersion())) {
            ContainerRepairer repairer = repairer(config, docker, RepairMetrics.NOOP, false);
            return new ContainersCommand(docker, repairer, Clock.systemUTC(), out, err)
                    .run(config.containerIds(), mode, checkOnly, config.json());
        }
    }

    private static int runAgent(AgentConfig config) {
        Logger log = LoggerFactory.getLogger(Main.class);
        Clock clock = Clock.systemUTC();
        WebSecurity web;
        try {
            web = WebSecurity.load(config.webConfigFile());
        } catch (ConfigException e) {
            log.error("{}", e.getMessage());
            return ExitCodes.USAGE;
        }
        try (MicrometerRepairMetrics metrics = MicrometerRepairMetrics.withProcessMetrics();
             PodEvents podEvents = PodEventsFactory.create(config.kubernetes(), config.nodeName(), metrics, clock,
                     System.getenv());
             Docker docker = DockerEngine.create(config.dockerHost(), config.dockerApiVersion())) {
            metrics.resyncInterval(config.resyncInterval());
            Agent agent = new Agent(docker, new DockerEvents(docker), repairer(config, docker, metrics, config.beforeStart()),
                    new ExaminationReporter(metrics, podEvents), metrics, clock,
                    config.workers(), config.resyncInterval(), config.shutdownGrace());
            try (AgentHttpServer http = new AgentHttpServer(
                    new InetSocketAddress(config.listenHost(), config.listenPort()), metrics::scrape, agent, web)) {
                CountDownLatch stop = new CountDownLatch(1);
                Signals.onTerminate(stop::countDown);
                http.start();
                agent.start();
                log.info("driver-alias-agent started: docker {}, listening on {}:{}, library directories {}",
                        config.dockerHost(), config.listenHost(), http.port(), config.libraryDirectories());
                stop.await();
                log.info("stopping: finishing repairs in flight (at most {})", config.shutdownGrace());
                agent.close();
            }
            return ExitCodes.HEALTHY;
        } catch (ConfigException e) {
            log.error("{}", e.getMessage());
            return ExitCodes.USAGE;
        } catch (IOException e) {
            log.error("cannot listen on {}:{}: {}", config.listenHost(), config.listenPort(), e.getMessage());
            return ExitCodes.USAGE;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return ExitCodes.HEALTHY;
        }
    }

    private static ContainerRepairer repairer(AgentConfig config, Docker docker, RepairMetrics metrics,
                                              boolean beforeStart) {
        PathResolver resolver = PathResolver.detect(config.forceWalkResolver());
        Optional<String> version = config.driverVersion().or(() -> hostDriverVersion(config.hostProc()));
        version.ifPresent(metrics::driverVersion);
        DriverLocator locator = new DriverLocator(new SonameCache(4096), new HostRoot(config.hostProc(), resolver));
        AliasPlanner planner = new AliasPlanner(config.devLinks());
        RuntimeFileSets runtimeFiles = new RuntimeFileSets();
        CreateTimeSeeder seeder = beforeStart ? new CreateTimeSeeder(locator::hostFileSoname,
                gpu -> runtimeFiles.expected(gpu, locator.learnedDriverFiles()), planner, resolver,
                new CreateTimeSeeder.Settings(version, config.libraryDirectories(), Set.copyOf(config.gpuRuntimes())))
                : null;
        return new ContainerRepairer(docker, new ContainerRoots(config.hostProc(), resolver),
                new RootRepairer(locator, planner, loaderCache(config)),
                new ContainerScope(config.includeImages(), config.excludeImages()),
                new ContainerRepairer.Settings(config.libraryDirectories(), version), seeder, Clock.systemUTC(),
                runtimeFiles);
    }

    private static LoaderCache loaderCache(AgentConfig config) {
        return config.ldconfig() == AgentConfig.LdconfigMode.CACHE ? new LdSoCache() : LoaderCache.OFF;
    }

    /** The loaded kernel module's version: the driver every container on this node receives. */
    private static Optional<String> hostDriverVersion(String hostProc) {
        try {
            // A file of the host's procfs, written by the kernel module: not a container path.
            String text = Files.readString(Path.of(hostProc, "driver", "nvidia", "version"), StandardCharsets.ISO_8859_1);
            return DriverVersions.fromProcVersion(text);
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }
}
