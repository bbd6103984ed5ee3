package io.driveralias.agent;

import io.driveralias.agent.cli.ContainersCommand;
import io.driveralias.agent.cli.ExitCodes;
import io.driveralias.agent.cli.RootRepairCommand;
import io.driveralias.agent.config.AgentConfig;
import io.driveralias.agent.config.ConfigException;
import io.driveralias.agent.config.ConfigParser;
import io.driveralias.agent.config.RuntimeChoice;
import io.driveralias.agent.containerd.ContainerdRuntime;
import io.driveralias.agent.containerd.DockerNamespace;
import io.driveralias.agent.core.AliasPlanner;
import io.driveralias.agent.core.ContainerScope;
import io.driveralias.agent.core.GpuRequest;
import io.driveralias.agent.docker.DockerEngine;
import io.driveralias.agent.live.ContainerRuntime;
import io.driveralias.agent.live.RuntimeEvents;
import io.driveralias.agent.fs.HostRoot;
import io.driveralias.agent.fs.ProcessStartTime;
import io.driveralias.agent.fs.PathResolver;
import io.driveralias.agent.http.AgentHttpServer;
import io.driveralias.agent.http.AgentStatus;
import io.driveralias.agent.webconfig.WebSecurity;
import io.driveralias.agent.kube.PodEvents;
import io.driveralias.agent.kube.PodEventsFactory;
import io.driveralias.agent.live.Agent;
import io.driveralias.agent.live.ContainerRepairer;
import io.driveralias.agent.live.RuntimeFileSets;
import io.driveralias.agent.live.ContainerRoots;
import io.driveralias.agent.live.DriverLooks;
import io.driveralias.agent.live.ExaminationReporter;
import io.driveralias.agent.live.NriRuntime;
import io.driveralias.agent.live.NodeDriver;
import io.driveralias.agent.live.NriStarts;
import io.driveralias.agent.nri.NriPlugin;
import io.driveralias.agent.logging.LogSetup;
import io.driveralias.agent.metrics.MicrometerRepairMetrics;
import io.driveralias.agent.metrics.RepairMetrics;
import io.driveralias.agent.overlay.CreateTimeSeeder;
import io.driveralias.agent.overlay.HostDriver;
import io.driveralias.agent.repair.DriverLocator;
import io.driveralias.agent.repair.HostDriverFiles;
import io.driveralias.agent.repair.KernelModule;
import io.driveralias.agent.repair.LoaderCache;
import io.driveralias.agent.ldcache.LdSoCache;
import io.driveralias.agent.repair.RootRepairer;
import io.driveralias.agent.repair.SonameCache;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
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
        List<ContainerRuntime> runtimes;
        try {
            runtimes = runtimes(config);
        } catch (ConfigException e) {
            err.println("driver-alias-agent: " + e.getMessage());
            return ExitCodes.USAGE;
        }
        try {
            // One node, one host driver: the runtimes' repairers share what they learn.
            RepairParts parts = RepairParts.of(config, RepairMetrics.NOOP, false);
            List<ContainersCommand.Target> targets = new ArrayList<>();
            for (ContainerRuntime runtime : runtimes) {
                targets.add(new ContainersCommand.Target(runtime, parts.repairer(runtime)));
            }
            return new ContainersCommand(targets, Clock.systemUTC(), out, err)
                    .withHostDriver(new ContainersCommand.HostDriver(parts.hostFiles()::foundCount,
                            parts.hostFiles().directories(), () -> Optional.of(parts.node().look())))
                    .run(config.containerIds(), mode, checkOnly, config.json());
        } finally {
            runtimes.forEach(ContainerRuntime::close);
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
        List<ContainerRuntime> runtimes = new ArrayList<>();
        List<RuntimeChoice.Kind> kinds;
        try {
            kinds = RuntimeChoice.resolve(config, path -> Files.exists(Path.of(path)));
            runtimes.addAll(runtimes(config, kinds));
        } catch (ConfigException e) {
            log.error("{}", e.getMessage());
            return ExitCodes.USAGE;
        }
        // A runtime whose API the agent does not read (CRI-O): known through what its NRI calls tell, watched as any other.
        Optional<NriRuntime> nriAlone = RuntimeChoice.nriAlone(kinds)
                ? Optional.of(new NriRuntime(Path.of(config.nriSocket()), Set.copyOf(config.gpuRuntimes()),
                        new ProcessStartTime(config.hostProc(), Clock.systemUTC())::of))
                : Optional.empty();
        nriAlone.ifPresent(runtimes::add);
        // The watched runtimes first: a node without Docker exports no Docker series.
        Set<String> watchedNames = new java.util.TreeSet<>(runtimes.stream().map(ContainerRuntime::name).toList());
        if (kinds.contains(RuntimeChoice.Kind.NRI)) {
            watchedNames.add(NriStarts.RUNTIME_LABEL);
        }
        try (MicrometerRepairMetrics metrics = MicrometerRepairMetrics.withProcessMetrics(watchedNames);
             PodEvents podEvents = PodEventsFactory.create(config.kubernetes(), config.nodeName(), metrics, clock,
                     System.getenv())) {
            metrics.resyncInterval(config.resyncInterval());
            RepairParts parts = RepairParts.of(config, metrics, config.beforeStart());
            List<Agent.Watched> watched = new ArrayList<>();
            for (ContainerRuntime runtime : runtimes) {
                watched.add(new Agent.Watched(runtime, new RuntimeEvents(runtime), parts.repairer(runtime)));
            }
            Agent agent = new Agent(watched, new ExaminationReporter(metrics, podEvents), metrics, clock,
                    config.workers(), config.resyncInterval(), config.shutdownGrace(), config.podUid());
            Optional<NriPlugin> nri = kinds.contains(RuntimeChoice.Kind.NRI)
                    ? Optional.of(new NriPlugin(Path.of(config.nriSocket()), new NriStarts(agent,
                            nriAlone.isPresent() ? NriRuntime.NAME : "containerd",
                            Set.copyOf(config.gpuRuntimes()), new NriStarts.DriverPaths(parts.hostFiles()::knownPath,
                                    path -> parts.hostFiles().atHostPath(path).isPresent()), clock,
                            new ProcessStartTime(config.hostProc(), Clock.systemUTC())::of, nriAlone),
                            config.nriDeadline(), NriPlugin.DEFAULT_CALL_THREADS))
                    : Optional.empty();
            // Alive while the agent is and, on an NRI node, while the plugin's reading thread is.
            AgentStatus status = new AgentStatus() {
                @Override
                public boolean alive() {
                    return agent.alive() && nri.map(NriPlugin::alive).orElse(true);
                }

                @Override
                public boolean ready() {
                    return agent.ready();
                }
            };
            try (AgentHttpServer http = new AgentHttpServer(
                    new InetSocketAddress(config.listenHost(), config.listenPort()), metrics::scrape, status, web)) {
                CountDownLatch stop = new CountDownLatch(1);
                Signals.onTerminate(stop::countDown);
                http.start();
                parts.node().start();
                agent.start();
                nri.ifPresent(NriPlugin::start);
                log.info("driver-alias-agent started: {}, listening on {}:{}, library directories {}; the host's driver: {}",
                        runtimes.stream().map(r -> r.name() + " " + r.endpoint()).toList(), config.listenHost(), http.port(),
                        config.libraryDirectories(), parts.hostFiles().summary());
                stop.await();
                log.info("stopping: finishing repairs in flight (at most {})", config.shutdownGrace());
                nri.ifPresent(NriPlugin::close);
                agent.close();
                parts.node().close();
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
        } finally {
            runtimes.forEach(ContainerRuntime::close);
        }
    }

    /** The runtimes --runtime asks for, each built on its own settings; one that cannot be is a configuration error. */
    private static List<ContainerRuntime> runtimes(AgentConfig config) throws ConfigException {
        List<RuntimeChoice.Kind> kinds = RuntimeChoice.resolve(config, path -> Files.exists(Path.of(path)));
        if (RuntimeChoice.nriAlone(kinds)) {
            throw new ConfigException("this node's runtime is reached through NRI alone (" + config.nriSocket() + "; CRI-O):"
                    + " check and repair ask a runtime's own API, which the agent does not read here; the running agent's"
                    + " metrics (driver_alias_container_unrepaired) and log say what it did");
        }
        return runtimes(config, kinds);
    }

    /** The runtimes watched through their own APIs (NRI serves containerd's starts beside containerd's adapter). */
    private static List<ContainerRuntime> runtimes(AgentConfig config, List<RuntimeChoice.Kind> kinds) throws ConfigException {
        List<ContainerRuntime> runtimes = new ArrayList<>();
        for (RuntimeChoice.Kind kind : kinds) {
            if (kind == RuntimeChoice.Kind.NRI) {
                continue;
            }
            try {
                runtimes.add(switch (kind) {
                    case DOCKER -> DockerEngine.create(new DockerEngine.Settings(config.dockerHost(), config.dockerApiVersion(),
                            Set.copyOf(config.gpuRuntimes()), config.dockerContainerdAddress(), DockerNamespace::open,
                            new ProcessStartTime(config.hostProc(), Clock.systemUTC())));
                    case CONTAINERD, NRI -> new ContainerdRuntime(new ContainerdRuntime.Settings(config.containerdAddress(),
                            config.containerdNamespace(), config.containerdState(), config.hostProc(),
                            Set.copyOf(config.gpuRuntimes())), new ProcessStartTime(config.hostProc(), Clock.systemUTC()));
                });
            } catch (IllegalArgumentException | IllegalStateException e) {
                runtimes.forEach(ContainerRuntime::close);
                throw new ConfigException(kind.name().toLowerCase(java.util.Locale.ROOT) + ": " + e.getMessage());
            }
        }
        return runtimes;
    }

    /**
     * What every runtime's repairer shares: one node, one host driver, one record of what the GPU
     * runtime adds.
     */
    private record RepairParts(AgentConfig config, PathResolver resolver, HostDriverFiles hostFiles, NodeDriver node,
                               RootRepairer rootRepairer, RuntimeFileSets runtimeFiles, CreateTimeSeeder seeder) {

        static RepairParts of(AgentConfig config, RepairMetrics metrics, boolean beforeStart) {
            PathResolver resolver = PathResolver.detect(config.forceWalkResolver());
            HostRoot host = new HostRoot(config.hostProc(), resolver);
            KernelModule module = new KernelModule(config.hostProc());
            // --driver-version is the operator's choice; the loaded module's version is a preference,
            // so that a driver upgraded without reloading the module is seen as a mismatch, not as none.
            HostDriverFiles hostFiles = new HostDriverFiles(host, config.hostLibraryDirectories(), config.driverVersion(),
                    module::version, System::nanoTime, metrics::driverVersion);
            hostFiles.driverVersion().ifPresent(metrics::driverVersion);
            metrics.hostDriverFiles(hostFiles::foundCount, hostFiles::unmatched);
            AliasPlanner planner = new AliasPlanner(config.devLinks());
            RootRepairer rootRepairer = new RootRepairer(new DriverLocator(new SonameCache(4096), host, hostFiles), planner,
                    loaderCache(config));
            RuntimeFileSets runtimeFiles = new RuntimeFileSets();
            CreateTimeSeeder seeder = beforeStart ? new CreateTimeSeeder(hostDriver(hostFiles, runtimeFiles), planner,
                    resolver, new CreateTimeSeeder.Settings(config.libraryDirectories(),
                    new ProcessStartTime(config.hostProc(), Clock.systemUTC())), loaderCache(config)) : null;
            return new RepairParts(config, resolver, hostFiles, new NodeDriver(module::version, hostFiles, metrics), rootRepairer,
                    runtimeFiles, seeder);
        }

        /** The seeder's view of the host's driver: its own files by identity, and what the runtime adds. */
        private static HostDriver hostDriver(HostDriverFiles files, RuntimeFileSets runtimeFiles) {
            return new HostDriver() {
                @Override
                public Optional<String> sonameAt(String hostPath) {
                    return files.atHostPath(hostPath).map(HostDriverFiles.HostDriverFile::soname);
                }

                @Override
                public Map<String, String> runtimeFiles(GpuRequest gpu) {
                    return runtimeFiles.expected(gpu);
                }

                @Override
                public Optional<String> driverVersion() {
                    return files.driverVersion();
                }
            };
        }

        ContainerRepairer repairer(ContainerRuntime runtime) {
            ContainerRoots roots = new ContainerRoots(config.hostProc(), resolver);
            return new ContainerRepairer(runtime, roots, rootRepairer,
                    new ContainerScope(config.includeImages(), config.excludeImages()),
                    new ContainerRepairer.Settings(config.libraryDirectories(),
                            path -> hostFiles.atHostPath(path).isPresent(), hostFiles::foundCount),
                    seeder, Clock.systemUTC(), runtimeFiles, new DriverLooks(roots, hostFiles,
                    () -> node.state().reference(hostFiles.userSpaceVersions())));
        }
    }

    private static LoaderCache loaderCache(AgentConfig config) {
        return config.ldconfig() == AgentConfig.LdconfigMode.CACHE ? new LdSoCache() : LoaderCache.OFF;
    }

}
