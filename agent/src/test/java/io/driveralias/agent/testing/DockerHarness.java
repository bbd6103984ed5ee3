package io.driveralias.agent.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real Docker engine for the integration tests: the one named by {@code DOCKER_HOST}, or a
 * private {@code dockerd} with its own data root, exec root and socket under a temp dir
 * ({@code --iptables=false --bridge=none}), started once per test JVM and stopped at its end.
 * Tests drive it through the {@code docker} CLI, independently of the code under test.
 * {@link #start(DockerRelease, boolean, String...)} starts another, of one of the releases the ITs
 * run side by side, laid out as on a host: its exec root {@code docker} beside its socket (as
 * {@code /run/docker} is beside {@code /run/docker.sock}), and for the newer releases their own
 * containerd at {@code containerd/containerd.sock}.
 */
public final class DockerHarness implements AutoCloseable {

    private static DockerHarness shared;

    private final String host;
    private final Path dir;
    private final List<String> daemonOptions;
    private final DockerRelease release;
    private final String execRoot;
    private PrivateContainerd containerd;
    private Process daemon;

    private DockerHarness(String host, Path dir) {
        this(host, dir, List.of());
    }

    private DockerHarness(String host, Path dir, List<String> daemonOptions) {
        this(host, dir, daemonOptions, DockerRelease.DEBIAN_12, "exec");
    }

    private DockerHarness(String host, Path dir, List<String> daemonOptions, DockerRelease release, String execRoot) {
        this.host = host;
        this.dir = dir;
        this.daemonOptions = List.copyOf(daemonOptions);
        this.release = release;
        this.execRoot = execRoot;
    }

    /**
     * A private dockerd of {@code release}, keeping its images and containers in containerd's
     * image store ({@code "features": {"containerd-snapshotter": true}}, Docker 29's default on a new
     * install) or in overlay2, with extra daemon options; {@link #close} stops it (and its
     * containerd) and removes its data.
     */
    public static DockerHarness start(DockerRelease release, boolean imageStore, String... daemonOptions) {
        if (imageStore && !release.hasImageStore()) {
            throw new IllegalArgumentException("Docker " + release.version() + " has no containerd image store");
        }
        try {
            Path dir = sharedMount(Files.createTempDirectory("daa-dockerd-"));
            List<String> options = new ArrayList<>();
            PrivateContainerd containerd = null;
            if (release.needsContainerd()) {
                Files.writeString(dir.resolve("daemon.json"), "{\"features\": {\"containerd-snapshotter\": " + imageStore + "}}\n");
                options.addAll(List.of("--config-file", dir.resolve("daemon.json").toString()));
                containerd = PrivateContainerd.start(dir, release);
                options.addAll(List.of("--containerd", containerd.socket().toString()));
            }
            options.addAll(List.of(daemonOptions));
            DockerHarness docker = new DockerHarness("unix://" + dir.resolve("docker.sock"), dir, options, release, "docker");
            docker.containerd = containerd;
            try {
                docker.startDaemon();
            } catch (AssertionError | RuntimeException e) {
                docker.stopDaemonQuietly();
                throw e;
            }
            return docker;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public DockerRelease release() {
        return release;
    }

    /** The private containerd's root (its snapshots), for a newer release. */
    public java.util.Optional<Path> containerdRoot() {
        return java.util.Optional.ofNullable(containerd).map(PrivateContainerd::root);
    }

    /**
     * Another private dockerd beside {@link #get()}'s, with extra daemon options (another
     * storage driver, an added OCI runtime); {@link #close} stops it and removes its data.
     */
    public static DockerHarness startAnother(String... daemonOptions) {
        try {
            Path dir = sharedMount(Files.createTempDirectory("daa-dockerd-"));
            DockerHarness docker = new DockerHarness("unix://" + dir.resolve("docker.sock"), dir, List.of(daemonOptions));
            docker.startDaemon();
            return docker;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * The docker CLI against an engine that another harness starts and stops (Podman's
     * Docker-compatible socket: {@link PodmanHarness}).
     */
    static DockerHarness client(String host) {
        return new DockerHarness(host, null);
    }

    /** Only for {@link #startAnother}'s daemons: the shared one lives as long as the JVM. */
    @Override
    public void close() {
        if (this == shared) {
            throw new IllegalStateException("the shared Docker engine stops at JVM exit");
        }
        stopDaemonQuietly();
    }

    /** The private daemon's data root (layers, containers). */
    public Path dataRoot() {
        requirePrivate();
        return dir.resolve("data");
    }

    /** Whether this is {@link #get()}'s engine (without starting it). */
    public boolean isShared() {
        synchronized (DockerHarness.class) {
            return this == shared;
        }
    }

    public static synchronized DockerHarness get() {
        SharedEngines.used(SharedEngines.DOCKER);
        if (shared == null) {
            String given = System.getenv("DOCKER_HOST");
            if (given != null && !given.isBlank()) {
                shared = new DockerHarness(given, null);
            } else {
                try {
                    Path dir = sharedMount(Files.createTempDirectory("daa-dockerd-"));
                    shared = new DockerHarness("unix://" + dir.resolve("docker.sock"), dir);
                    shared.startDaemon();
                    Runtime.getRuntime().addShutdownHook(new Thread(shared::stopDaemonQuietly));
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
        }
        return shared;
    }

    /**
     * Removes whatever containers the shared engine still has, if it was started: each IT class
     * starts from an empty engine. A container a test left running costs every later stop of the
     * daemon its stop timeout (10 s for a {@code sleep}, which ignores SIGTERM), and later classes'
     * counts and listings would see it. Returns what was removed, for the report.
     */
    static synchronized List<String> removeSharedLeftovers() {
        if (shared == null || !shared.isPrivate() || shared.daemon == null) {
            return List.of();
        }
        Processes.Result listed = Processes.run(shared.docker("ps", "-aq", "--no-trunc"), 30);
        List<String> ids = listed.exitCode() == 0 ? listed.output().lines().filter(l -> !l.isBlank()).toList() : List.of();
        if (!ids.isEmpty()) {
            List<String> rm = new ArrayList<>(List.of("rm", "-f"));
            rm.addAll(ids);
            Processes.run(shared.docker(rm.toArray(String[]::new)), 300);
        }
        return ids;
    }

    public String host() {
        return host;
    }

    public boolean isPrivate() {
        return dir != null;
    }

    /** Starts the private daemon (again, after {@link #stopDaemon}) and waits until it answers. */
    public synchronized void startDaemon() {
        requirePrivate();
        try {
            Path log = dir.resolve("dockerd.log");
            List<String> cmd = new ArrayList<>(List.of(release.dockerd(),
                    "--data-root", dir.resolve("data").toString(),
                    "--exec-root", dir.resolve(execRoot).toString(),
                    "--pidfile", dir.resolve("docker.pid").toString(),
                    "-H", host,
                    "--iptables=false", "--ip6tables=false", "--bridge=none"));
            cmd.addAll(daemonOptions);
            ProcessBuilder builder = new ProcessBuilder(cmd)
                    .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
            if (!release.binDirectories().isEmpty()) {
                builder.environment().put("PATH", String.join(":", release.binDirectories()) + ":" + System.getenv("PATH"));
            }
            daemon = builder.start();
        } catch (IOException e) {
            throw new AssertionError("cannot start dockerd (apt-get install docker.io; .ci/run does): " + e, e);
        }
        long begun = System.nanoTime();
        long deadline = begun + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            if (Processes.run(docker("version", "--format", "{{.Server.APIVersion}}"), 10).exitCode() == 0) {
                reportSlow("answered", begun);
                return;
            }
            if (!daemon.isAlive()) {
                throw new AssertionError("dockerd exited: " + readLog());
            }
            sleep(200);
        }
        throw new AssertionError("dockerd did not answer within 60 s: " + readLog());
    }

    /** Stops the private daemon (its containers stop with it). */
    public synchronized void stopDaemon() {
        requirePrivate();
        if (daemon == null) {
            return;
        }
        long begun = System.nanoTime();
        Processes.terminate(daemon, 60);
        daemon = null;
        reportSlow("stopped", begun);
    }

    /** A dockerd that takes more than 5 s to stop or answer slows every test after it: said, with its log's end. */
    private void reportSlow(String what, long begunNanos) {
        long ms = (System.nanoTime() - begunNanos) / 1_000_000;
        if (ms > 5000) {
            String log = readLog();
            System.out.printf("[docker-harness] dockerd %s %s after %d ms; its log ends:%n%s%n", dir, what, ms,
                    log.substring(Math.max(0, log.length() - 3000)));
        }
    }

    /**
     * A crash of the Docker stack: dockerd gets SIGKILL, and so do its managed containerd, the
     * runtime shims and the container processes; the runtime's state (on tmpfs on a real host)
     * is lost as at a reboot, since a new containerd stalls on the dead shims' state instead of
     * starting. Containers from before are gone; {@link #startDaemon} brings Docker back.
     */
    public synchronized void crashDaemon() {
        requirePrivate();
        if (daemon == null) {
            return;
        }
        Path runtimeState = dir.resolve(execRoot + "/containerd");
        String containerd = "";
        try {
            containerd = Files.readString(runtimeState.resolve("containerd.pid")).trim();
        } catch (IOException e) {
            // No managed containerd: nothing more to kill.
        }
        daemon.destroyForcibly();
        try {
            daemon.waitFor(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        daemon = null;
        if (containerd.matches("[1-9][0-9]*")) {
            Processes.run(List.of("kill", "-9", containerd), 10);
        }
        killShims(runtimeState);
        Processes.run(List.of("sh", "-c", "grep -o ' " + runtimeState + "[^ ]*' /proc/mounts | xargs -r -n1 umount -l"),
                30);
        Processes.run(List.of("rm", "-rf", runtimeState.toString()), 30);
        try {
            Files.deleteIfExists(dir.resolve("docker.pid"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** SIGSTOP (frozen: connections accepted, nothing answered) or SIGCONT to dockerd. */
    public synchronized void signalDaemon(String signal) {
        requirePrivate();
        Processes.check(List.of("kill", "-" + signal, String.valueOf(daemon.pid())));
    }

    /** SIGKILL to the runtime shims of a daemon's containerd, and to their containers' processes. */
    private static void killShims(Path runtimeState) {
        String shims = Processes.run(List.of("pgrep", "-f", "containerd-shim.*" + runtimeState), 10).output();
        for (String shim : shims.split("\\s+")) {
            if (shim.matches("[1-9][0-9]*")) {
                Processes.run(List.of("pkill", "-9", "-P", shim), 10); // the container processes
                Processes.run(List.of("kill", "-9", shim), 10);
            }
        }
    }

    /**
     * The daemon's directory as a mount of its own in a shared peer group, as a systemd host
     * has its root: a container given a part of it with {@code bind-propagation=rslave} (the
     * DaemonSet's {@code mountPropagation: HostToContainer}) then sees the overlays Docker
     * mounts there later. Docker refuses rslave on a private mount.
     */
    private static Path sharedMount(Path dir) {
        Processes.check(List.of("mount", "--bind", dir.toString(), dir.toString()));
        Processes.check(List.of("mount", "--make-shared", dir.toString()));
        return dir;
    }

    /**
     * At JVM exit: stop the private daemon and remove its data root (images, layers, logs). A
     * container that outlived its daemon (one it could not stop in time) would keep its shim
     * running for good: those go too.
     */
    private void stopDaemonQuietly() {
        try {
            stopDaemon();
            killShims(dir.resolve(execRoot + "/containerd"));
            if (containerd != null) {
                containerd.stop();
            }
            // Once a container has used --network host, dockerd leaves the host's network
            // namespace bind-mounted here when it stops, and rm could not remove the directory.
            Processes.run(List.of("umount", "-l", dir.resolve(execRoot + "/netns/default").toString()), 30);
            // Mounts a crashed daemon or containerd left (roots, shm): under the shared mount, gone with it.
            Processes.run(List.of("sh", "-c", "grep -o ' " + dir + "/[^ ]*' /proc/mounts | sort -r | xargs -r -n1 umount -l"), 30);
            Processes.run(List.of("umount", "-l", dir.toString()), 30);
            Processes.run(List.of("rm", "-rf", dir.toString()), 120);
        } catch (RuntimeException | AssertionError ignored) {
            // Best effort at JVM exit.
        }
    }

    private void requirePrivate() {
        if (dir == null) {
            throw new IllegalStateException("the Docker engine at " + host + " is not ours to start or stop");
        }
    }

    private String readLog() {
        try {
            List<String> lines = Files.readAllLines(dir.resolve("dockerd.log"));
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
        } catch (IOException e) {
            return "(no log)";
        }
    }

    /**
     * A docker CLI command line against this engine. A container made without a network of its
     * own gets the host's ({@code --network host}; the agent never looks at a container's
     * network): these engines run with {@code --bridge=none}, where a container on the default
     * network leaves its network sandbox behind when it is removed, and the next daemon start
     * removes each one (0.4-0.7 s apiece on 20.10: 497 of them, from a run's earlier tests, made
     * one restart take 167 s). {@code --network none} leaves nothing either, but makes each
     * container a network namespace of its own: 30 {@code docker run} took 19-25 s instead of 10.
     */
    public List<String> docker(String... args) {
        List<String> cmd = new ArrayList<>(List.of("docker", "-H", host));
        List<String> given = List.of(args);
        boolean makes = !given.isEmpty() && (given.getFirst().equals("run") || given.getFirst().equals("create"));
        boolean hasNetwork = given.stream().anyMatch(a -> a.equals("--network") || a.equals("--net")
                || a.startsWith("--network=") || a.startsWith("--net="));
        if (makes && !hasNetwork) {
            cmd.add(given.getFirst());
            cmd.addAll(List.of("--network", "host"));
            cmd.addAll(given.subList(1, given.size()));
        } else {
            cmd.addAll(given);
        }
        return cmd;
    }

    /**
     * {@code docker rm -f} of these containers, without failing. On Debian 12's Docker 20.10.24
     * one container at a time: the CLI removes a list in parallel, and concurrent network teardowns
     * on one network can deadlock that engine for good (its exit handlers stuck in
     * {@code releaseNetwork}; moby/moby#46661, fixed in 20.10.27, which Debian 12 does not ship).
     * Seen once in about 20 CI runs, in a removal of 100 at once.
     */
    public void removeContainers(List<String> ids) {
        if (ids.isEmpty()) {
            return;
        }
        if (release == DockerRelease.DEBIAN_12) {
            for (String id : ids) {
                tryRun("rm", "-f", id);
            }
            return;
        }
        List<String> args = new ArrayList<>(List.of("rm", "-f"));
        args.addAll(ids);
        tryRun(args.toArray(String[]::new));
    }

    /** Runs docker and requires success; returns trimmed output. */
    public String run(String... args) {
        return Processes.check(docker(args)).trim();
    }

    /** Runs docker; returns exit code and output. */
    public Processes.Result tryRun(String... args) {
        return Processes.run(docker(args));
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
