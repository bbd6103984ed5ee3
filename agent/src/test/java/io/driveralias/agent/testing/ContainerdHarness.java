package io.driveralias.agent.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * A real containerd for the integration tests, private (its own root, state, gRPC, ttrpc and
 * debug sockets under a temp dir, its runc state too), of one of the releases the tests run side
 * by side ({@link ContainerdVersion}: Debian bookworm's 1.6 by {@link #get()}, 1.7 and 2.1 from the
 * fixture cache by {@link #of}), each with its own ctr and shim and the system's runc, and NRI on
 * where the release has it ({@link #nriSocket()}). The CRI plugin is on: a small local sandbox
 * image, no CNI (pods use the node's network, as the CRI allows), and two runtime handlers,
 * {@code runc} (the default) and {@code nvidia}, both io.containerd.runc.v2, the second with
 * {@code BinaryName} = a launcher named {@code nvidia-container-runtime} of the test wrapper
 * {@code src/test/fixtures/containerd-gpu-runtime.sh}, as the GPU Operator configures NVIDIA's:
 * for a container whose spec asks for GPUs it adds a prestart hook that mounts NVIDIA's real
 * versioned files ({@link RealDriver}) in the container's own mount namespace, as NVIDIA's legacy
 * hook does. Each release's instance is started once per test JVM and stopped at its end, with
 * its shims (2.x sandbox shims outlive their task); {@link #kill} and {@link #start} restart it
 * (the shims and containers live on). Tests drive it through {@code ctr} and {@link CriClient},
 * independently of the code under test.
 */
public final class ContainerdHarness {

    /** The CRI's namespace. */
    public static final String K8S = "k8s.io";
    public static final String PAUSE_IMAGE = "docker.io/daa-test/pause:1";

    private static final Map<ContainerdVersion, ContainerdHarness> SHARED = new EnumMap<>(ContainerdVersion.class);

    private final ContainerdVersion release;
    private final Path dir;
    private final Map<String, String> imported = new ConcurrentHashMap<>();
    private Process daemon;
    private CriClient cri;

    private String version;

    private ContainerdHarness(ContainerdVersion release, Path dir) {
        this.release = release;
        this.dir = dir;
    }

    /** Debian bookworm's containerd 1.6, as the tests have always had it. */
    public static ContainerdHarness get() {
        return of(ContainerdVersion.V1_6);
    }

    /** The instance of {@code release}, started on first use. */
    public static synchronized ContainerdHarness of(ContainerdVersion release) {
        SharedEngines.used(SharedEngines.CONTAINERD);
        ContainerdHarness instance = SHARED.get(release);
        if (instance == null) {
            try {
                Path dir = Files.createTempDirectory("daa-containerd-" + release.name().toLowerCase(java.util.Locale.ROOT) + "-");
                // A mount of its own in a shared peer group, as a systemd host has /run: a container given
                // the state directory with HostToContainer propagation sees the roots mounted there later.
                Processes.check(List.of("mount", "--bind", dir.toString(), dir.toString()));
                Processes.check(List.of("mount", "--make-shared", dir.toString()));
                instance = new ContainerdHarness(release, dir);
                Runtime.getRuntime().addShutdownHook(new Thread(instance::destroy));
                instance.configure();
                instance.start();
                SHARED.put(release, instance);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return instance;
    }

    public ContainerdVersion release() {
        return release;
    }

    /** The release as the binary reports it ({@code containerd --version}), e.g. "1.7.24". */
    public synchronized String version() {
        if (version == null) {
            String out = Processes.check(List.of(release.binary("containerd"), "--version"));
            java.util.regex.Matcher m = java.util.regex.Pattern.compile(" v?(\\d+\\.\\d+\\.\\d+)").matcher(out);
            version = m.find() ? m.group(1) : out.trim();
        }
        return version;
    }

    /** The NRI socket external plugins connect to; only on a release with NRI. */
    public Path nriSocket() {
        if (!release.hasNri()) {
            throw new IllegalStateException("containerd " + release + " has no NRI");
        }
        return dir.resolve("nri/nri.sock");
    }

    public String socket() {
        return dir.resolve("containerd.sock").toString();
    }

    /** {@code unix:///...}, as {@code --containerd-address} takes it. */
    public String address() {
        return "unix://" + socket();
    }

    /** containerd's state directory ({@code --containerd-state}): the tasks' bundles and roots. */
    public Path stateDir() {
        return dir.resolve("state");
    }

    public Path rootDir() {
        return dir.resolve("root");
    }

    /** runc's state directory for the containers made here ({@code ctr --runc-root}). */
    public Path runcRoot() {
        return dir.resolve("runc");
    }

    /** The nvidia handler's BinaryName: the launcher of the test wrapper. */
    public Path gpuRuntimeBinary() {
        return dir.resolve("bin/nvidia-container-runtime");
    }

    /**
     * While {@code holdStart(id)} lasts, the nvidia handler's {@code runc start} of that container
     * waits: its task exists (created, its process before its first instruction), not yet started.
     */
    public Hold holdStart(String id) {
        Path hold = holdDir().resolve(id);
        try {
            Files.writeString(hold, "");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return () -> {
            try {
                Files.deleteIfExists(hold);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        };
    }

    /** A held start, let go by {@link #close()}. */
    public interface Hold extends AutoCloseable {
        @Override
        void close();
    }

    private Path holdDir() {
        return dir.resolve("hold");
    }

    public synchronized CriClient cri() {
        if (cri == null) {
            cri = new CriClient(socket(), dir.resolve("pod-logs"));
        }
        return cri;
    }

    private void configure() throws IOException {
        Path fixture = RealDriver.moduleDir().resolve("src/test/fixtures/containerd-gpu-runtime.sh").toAbsolutePath();
        Path launcher = Files.createDirectories(dir.resolve("bin")).resolve("nvidia-container-runtime");
        // The hook's driver: NVIDIA's real versioned files and nvidia-smi (RealDriver's fixtures).
        Files.writeString(launcher, "#!/bin/sh\nexport DAA_HOLD_DIR='" + holdDir() + "'\n"
                + "export DAA_DRIVER_DIR='" + RealDriver.libraryDir(RealDriver.Arch.AMD64) + "'\n"
                + "export DAA_LIB_DIR='" + RealDriver.Arch.AMD64.libDir() + "'\n"
                + "export DAA_NVIDIA_SMI='" + RealDriver.nvidiaSmi(RealDriver.Arch.AMD64) + "'\n"
                + "exec bash '" + fixture + "' \"$@\"\n");
        Files.createDirectories(holdDir());
        Files.setPosixFilePermissions(launcher, PosixFilePermissions.fromString("rwxr-xr-x"));
        Files.createDirectories(dir.resolve("pod-logs"));
        Files.createDirectories(dir.resolve("cni/conf"));
        Files.createDirectories(dir.resolve("cni/bin"));
        Files.createDirectories(dir.resolve("cdi"));
        Files.createDirectories(dir.resolve("nri/plugins"));
        Files.createDirectories(dir.resolve("nri/conf.d"));
        Files.writeString(dir.resolve("config.toml"), ContainerdConfigs.toml(release, dir, PAUSE_IMAGE, launcher));
    }

    /** Starts containerd (again, after {@link #kill}) and waits until it answers; imports the sandbox image once. */
    public synchronized void start() {
        try {
            ProcessBuilder builder = new ProcessBuilder(release.binary("containerd"), "--config", dir.resolve("config.toml").toString())
                    .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("containerd.log").toFile()));
            // The release's own shim (found on PATH and next to containerd), the system's runc.
            release.binDir().ifPresent(bin -> builder.environment().put("PATH", bin + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"
                    + ":/sbin:/bin"));
            daemon = builder.start();
        } catch (IOException e) {
            throw new AssertionError("cannot start containerd (apt-get install containerd; .ci/run does): " + e, e);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (Processes.run(ctr("version"), 10).exitCode() != 0) {
            if (!daemon.isAlive()) {
                throw new AssertionError("containerd exited: " + log());
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("containerd did not answer within 60 s: " + log());
            }
            DockerHarness.sleep(100);
        }
        if (!imported.containsKey(K8S + " " + PAUSE_IMAGE)) {
            Path root = pauseRoot();
            importImage(K8S, PAUSE_IMAGE, root, List.of("/bin/sleep", "2147483647"));
        }
    }

    /** containerd's pid, while it runs. */
    public synchronized long pid() {
        return daemon.pid();
    }

    /** {@code kill -9} of containerd alone: its shims and their containers go on, as on a node. */
    public synchronized void kill() {
        daemon.destroyForcibly();
        try {
            daemon.waitFor(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A test image (TestImages' root) imported into {@code namespace} as {@code docker.io/daa-test/<name>:1}. */
    public String image(String namespace, String name, String libDir, TestImages.RootCustomizer extra, String... command) {
        String ref = "docker.io/daa-test/" + name + ":1";
        importImage(namespace, ref, TestImages.rootTar(name, libDir, extra), List.of(command));
        return ref;
    }

    /**
     * The debootstrapped Debian bookworm root of {@link RealDriver} (python3 with ctypes, glibc's
     * ldconfig) imported into {@code namespace} once, as {@code docker.io/daa-test/debian-bookworm-minbase:1}.
     */
    public String debianImage(String namespace) {
        String ref = "docker.io/daa-test/debian-bookworm-minbase:1";
        importImage(namespace, ref, RealDriver.cache().resolve("debian-bookworm-minbase.tar"),
                List.of("PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"), List.of("/bin/bash"));
        return ref;
    }

    private void importImage(String namespace, String ref, Path rootTar, List<String> command) {
        importImage(namespace, ref, rootTar, List.of("PATH=/usr/bin:/bin:/sbin"), command);
    }

    /** An image of {@code rootTar} with this environment in its config, imported into {@code namespace} as {@code ref}, once. */
    public void importImage(String namespace, String ref, Path rootTar, List<String> env, List<String> command) {
        imported.computeIfAbsent(namespace + " " + ref, key -> {
            Path archive = OciArchive.write(rootTar, ref, env, command, dir.resolve("image-" + Math.abs(key.hashCode()) + ".tar"));
            try {
                Processes.check(ctr("-n", namespace, "images", "import", archive.toString()));
            } finally {
                Processes.run(List.of("rm", "-f", archive.toString()), 60);
            }
            if (namespace.equals(K8S)) {
                awaitCriImage(ref);
            }
            return ref;
        });
    }

    /**
     * Until the CRI's image store lists {@code ref}, as it does once a kubelet's PullImage returns:
     * after {@code ctr images import} it may not yet (see {@link CriClient#hasImage}).
     */
    private void awaitCriImage(String ref) {
        long start = System.nanoTime();
        long deadline = start + TimeUnit.SECONDS.toNanos(60);
        String last = "not listed";
        for (int tries = 1; ; tries++) {
            try {
                if (cri().hasImage(ref)) {
                    if (tries > 1) {
                        System.out.printf("[containerd-harness] containerd %s's CRI listed the imported %s after %d tries, %.0f ms%n",
                                version(), ref, tries, (System.nanoTime() - start) / 1e6);
                    }
                    return;
                }
            } catch (RuntimeException e) {
                last = e.toString(); // the CRI plugin may still be starting ("server is not initialized yet")
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("containerd's CRI did not list the imported image " + ref + " within 60 s (" + last
                        + "): " + log());
            }
            DockerHarness.sleep(20);
        }
    }

    /** A root of busybox alone, whose sleep is the sandbox's "pause". */
    private Path pauseRoot() {
        return busyboxRoot("pause-root", List.of("sleep"));
    }

    /**
     * busybox with a shell and a few tools ({@code sh cat echo ls sleep date test}), imported into
     * {@code namespace} once as {@code docker.io/daa-test/busybox:1}: a small image for tests that
     * need a container and nothing of a driver.
     */
    public String busyboxImage(String namespace) {
        String ref = "docker.io/daa-test/busybox:1";
        importImage(namespace, ref, busyboxRoot("busybox-root", List.of("sh", "cat", "echo", "ls", "sleep", "date", "test")),
                List.of("/bin/sh"));
        return ref;
    }

    private synchronized Path busyboxRoot(String name, List<String> applets) {
        try {
            Path tar = dir.resolve(name + ".tar");
            if (Files.exists(tar)) {
                return tar;
            }
            Path root = Files.createDirectories(dir.resolve(name + "/bin"));
            Files.createDirectories(dir.resolve(name + "/tmp"));
            Files.copy(Path.of("/bin/busybox"), root.resolve("busybox"));
            for (String applet : applets) {
                Files.createSymbolicLink(root.resolve(applet), Path.of("busybox"));
            }
            Processes.check(List.of("tar", "--numeric-owner", "-C", root.getParent().toString(), "-cf", tar.toString(), "."));
            return tar;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A ctr command line against this containerd. */
    public List<String> ctr(String... args) {
        List<String> cmd = new ArrayList<>(List.of(release.binary("ctr"), "-a", socket()));
        cmd.addAll(List.of(args));
        return cmd;
    }

    /** Runs ctr and requires success; returns its trimmed output. */
    public String run(String... args) {
        return Processes.check(ctr(args)).trim();
    }

    /**
     * {@code ctr run -d} of {@code image} in {@code namespace}: a container and its started task,
     * with runc's state kept here. Returns the id.
     */
    public String ctrRun(String namespace, String image, String id, String... command) {
        List<String> args = new ArrayList<>(List.of("-n", namespace, "run", "-d", "--runc-root", runcRoot().toString(), image, id));
        args.addAll(List.of(command));
        run(args.toArray(String[]::new));
        return id;
    }

    /**
     * {@code ctr run -d} with ctr's own options first ({@code --mount type=bind,...},
     * {@code --log-uri file:///...}, {@code --env ...}).
     */
    public String ctrRun(String namespace, List<String> options, String image, String id, String... command) {
        List<String> args = new ArrayList<>(List.of("-n", namespace, "run", "-d", "--runc-root", runcRoot().toString()));
        args.addAll(options);
        args.addAll(List.of(image, id));
        args.addAll(List.of(command));
        run(args.toArray(String[]::new));
        return id;
    }

    /** A ctr-made container and its task gone, whatever state they are in (best effort). */
    public void remove(String namespace, String id) {
        Processes.run(ctr("-n", namespace, "tasks", "kill", "-s", "KILL", id), 30);
        Processes.run(ctr("-n", namespace, "tasks", "delete", "-f", id), 30);
        Processes.run(ctr("-n", namespace, "containers", "delete", id), 30);
    }

    /** {@code ctr tasks exec} of {@code command} in a running container (a CRI one too); its exit code and output. */
    public Processes.Result exec(String namespace, String id, String... command) {
        List<String> args = new ArrayList<>(List.of("-n", namespace, "tasks", "exec", "--exec-id",
                "daa-" + java.util.UUID.randomUUID().toString().substring(0, 8), id));
        args.addAll(List.of(command));
        return Processes.run(ctr(args.toArray(String[]::new)), 60);
    }

    /** The writable layer (overlayfs {@code upperdir}) of the snapshot {@code key} (a container's id), as ctr reports it. */
    public Path upperDir(String namespace, String key) {
        String mount = run("-n", namespace, "snapshots", "mounts", "/daa-not-mounted", key);
        java.util.regex.Matcher upper = java.util.regex.Pattern.compile("upperdir=([^,\\s]+)").matcher(mount);
        if (!upper.find()) {
            throw new AssertionError("no upperdir for snapshot " + key + ": " + mount);
        }
        return Path.of(upper.group(1));
    }

    /** The pid of a container's task, as its shim wrote it. */
    public int taskPid(String namespace, String id) {
        try {
            return Integer.parseInt(Files.readString(stateDir().resolve("io.containerd.runtime.v2.task/" + namespace + "/" + id
                    + "/init.pid")).trim());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private String log() {
        return logTail(30);
    }

    /** The last {@code n} lines of containerd's own log, for a failure's message. */
    public String logTail(int n) {
        try {
            List<String> lines = Files.readAllLines(dir.resolve("containerd.log"));
            return String.join("\n", lines.subList(Math.max(0, lines.size() - n), lines.size()));
        } catch (IOException e) {
            return "(no log)";
        }
    }

    /**
     * At JVM exit: the shims of this containerd (found by its socket, on their command lines) and
     * their containers, then containerd; the mounts under its directory, then the directory.
     */
    private synchronized void destroy() {
        try {
            if (cri != null) {
                cri.close();
            }
            String shims = Processes.run(List.of("pgrep", "-f", "containerd-shim.* -address " + socket()), 10).output();
            for (String shim : shims.split("\\s+")) {
                if (shim.matches("[1-9][0-9]*")) {
                    Processes.run(List.of("pkill", "-9", "-P", shim), 10);
                    Processes.run(List.of("kill", "-9", shim), 10);
                }
            }
            if (daemon != null) {
                daemon.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
            }
            List<String> mounts = new ArrayList<>();
            for (String line : Files.readAllLines(Path.of("/proc/self/mounts"))) {
                String target = line.split(" ")[1];
                if (target.startsWith(dir + "/")) {
                    mounts.add(target);
                }
            }
            mounts.sort(Comparator.comparingInt(String::length).reversed());
            for (String mount : mounts) {
                Processes.run(List.of("umount", "-l", mount), 30);
            }
            Processes.run(List.of("umount", "-l", dir.toString()), 30);
            Processes.run(List.of("rm", "-rf", dir.toString()), 120);
        } catch (IOException | RuntimeException | AssertionError e) {
            // Best effort at JVM exit.
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
