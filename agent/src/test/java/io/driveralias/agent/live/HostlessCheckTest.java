package io.driveralias.agent.live;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.cli.ContainersCommand;
import io.driveralias.agent.cli.ExitCodes;
import io.driveralias.agent.core.AliasPlanner;
import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.ContainerScope;
import io.driveralias.agent.core.GpuRequest;
import io.driveralias.agent.fs.HostRoot;
import io.driveralias.agent.fs.PathResolver;
import io.driveralias.agent.repair.DriverLocator;
import io.driveralias.agent.repair.HostDriverFiles;
import io.driveralias.agent.repair.RootRepairer;
import io.driveralias.agent.repair.SonameCache;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code check} and {@code repair} on a host where the agent finds none of the driver's files (the
 * driver installed where it does not look): a GPU container there cannot be repaired, so the
 * command says so, names where it looked, and exits 1; without GPU containers it stays quiet.
 */
class HostlessCheckTest {

    private static final Instant STARTED = Instant.parse("2026-12-01T10:00:00Z");

    @TempDir
    Path dir;

    private final FakeRuntime runtime = new FakeRuntime();
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();
    private ContainerFixtures fixtures;
    private HostDriverFiles emptyHost;
    private Path looked;

    @BeforeEach
    void setUp() throws Exception {
        fixtures = new ContainerFixtures(dir);
        looked = Files.createDirectories(dir.resolve("host/usr/lib/x86_64-linux-gnu"));
        PathResolver resolver = PathResolver.detect(false);
        emptyHost = new HostDriverFiles(new HostRoot(dir.resolve("host-proc").toString(), resolver), List.of(looked.toString()),
                Optional.empty());
    }

    private int check(boolean json) {
        return check(json, emptyHost::foundCount);
    }

    /** {@code hostFiles}: how many driver files the host has, as the agent is told by its scan. */
    private int check(boolean json, java.util.function.IntSupplier hostFiles) {
        PathResolver resolver = PathResolver.detect(false);
        HostRoot host = new HostRoot(dir.resolve("host-proc").toString(), resolver);
        ContainerRepairer repairer = new ContainerRepairer(runtime, new ContainerRoots(dir.resolve("host-proc").toString(), resolver),
                new RootRepairer(new DriverLocator(new SonameCache(64), host, emptyHost), new AliasPlanner(false)),
                new ContainerScope(List.of(), List.of()),
                new ContainerRepairer.Settings(List.of(ContainerFixtures.LIB), path -> emptyHost.atHostPath(path).isPresent(),
                        hostFiles),
                null, Clock.systemUTC());
        return new ContainersCommand(List.of(new ContainersCommand.Target(runtime, repairer)), Clock.systemUTC(),
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8))
                .withHostDriver(new ContainersCommand.HostDriver(hostFiles, emptyHost.directories()))
                .run(List.of(), RootRepairer.Mode.DRY_RUN, true, json);
    }

    @Test
    void aGpuContainerOnAHostWithoutDriverFilesFailsTheCheckAndSaysWhy() throws Exception {
        // The GPU runtime bound the driver's files from a directory the agent does not scan.
        ContainerInfo gpu = fixtures.gpuContainer(ContainerFixtures.newId(), STARTED).toBuilder()
                .gpu(GpuRequest.of("nvidia", true, List.of("NVIDIA_VISIBLE_DEVICES=all"), false, false)).build();
        runtime.put(gpu);

        assertThat(check(false)).isEqualTo(ExitCodes.UNREPAIRED);

        assertThat(out.toString(StandardCharsets.UTF_8)).contains(gpu.id().substring(0, 12))
                .contains("no_driver (a GPU container, and the agent finds no driver files on the host: not repairable)");
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("no NVIDIA driver files on this host in [" + looked + "]")
                .contains("1 GPU container(s) run").contains("--host-lib-dir");
        assertThat(emptyHost.unmatched()).as("the container's driver file, none of the host's").isPositive();
    }

    /**
     * The platform's own case with the driver one directory away: its files bind-mounted into the
     * container with NVIDIA_VISIBLE_DEVICES=all, no GPU runtime, from a directory the agent does not
     * scan. Signs of a GPU, no request: looked at read-only, and loud, since the host shows no driver.
     */
    @Test
    void signsOfAGpuWithoutARequestOnAHostWithoutDriverFilesFailTheCheckToo() throws Exception {
        ContainerInfo bound = fixtures.gpuContainer(ContainerFixtures.newId(), STARTED).toBuilder()
                .gpu(GpuRequest.of("runc", false, List.of("NVIDIA_VISIBLE_DEVICES=all"), false, false)).build();
        runtime.put(bound);

        assertThat(check(false)).isEqualTo(ExitCodes.UNREPAIRED);

        assertThat(out.toString(StandardCharsets.UTF_8)).contains(bound.id().substring(0, 12))
                .contains("no_driver (a GPU container, and the agent finds no driver files on the host: not repairable)");
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("no NVIDIA driver files on this host in [" + looked + "]")
                .contains("1 GPU container(s) run");
        assertThat(emptyHost.unmatched()).as("its bound driver file, none of the host's").isPositive();
    }

    /** The same binds on a host whose driver the agent finds: a neighbour without a GPU request, left alone. */
    @Test
    void theSameSignsBesideAFoundDriverAreANeighbourLeftAlone() throws Exception {
        runtime.put(fixtures.gpuContainer(ContainerFixtures.newId(), STARTED).toBuilder()
                .gpu(GpuRequest.of("runc", false, List.of("NVIDIA_VISIBLE_DEVICES=all"), false, false)).build());

        assertThat(check(false, () -> 12)).isEqualTo(ExitCodes.HEALTHY);

        assertThat(out.toString(StandardCharsets.UTF_8)).contains("no_driver (no GPU request: its driver-named mounts are not"
                + " the host's driver files (nothing written))");
        assertThat(err.toString(StandardCharsets.UTF_8)).isEmpty();
    }

    @Test
    void theJsonSaysItOfTheContainer() throws Exception {
        runtime.put(fixtures.gpuContainer(ContainerFixtures.newId(), STARTED).toBuilder()
                .gpu(GpuRequest.of("nvidia", true, List.of("NVIDIA_VISIBLE_DEVICES=all"), false, false)).build());

        assertThat(check(true)).isEqualTo(ExitCodes.UNREPAIRED);
        assertThat(out.toString(StandardCharsets.UTF_8)).contains("\"problem\" : \"a GPU container, and the agent finds no driver"
                + " files on the host: not repairable\"");
    }

    @Test
    void withoutGpuContainersAHostWithoutDriverFilesIsNoFailure() throws Exception {
        ContainerInfo plain = fixtures.gpuContainer(ContainerFixtures.newId(), STARTED).toBuilder().mounts(List.of()).build();
        runtime.put(plain);

        assertThat(check(false)).isEqualTo(ExitCodes.HEALTHY);
        assertThat(err.toString(StandardCharsets.UTF_8)).isEmpty();
    }
}
