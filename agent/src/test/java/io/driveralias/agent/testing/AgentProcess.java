package io.driveralias.agent.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.regex.Pattern;

/**
 * The packaged agent ({@code agent/target/driver-alias-agent.jar}) run as its own process,
 * as an operator runs it. Its log goes to a file the test reads.
 */
public final class AgentProcess implements AutoCloseable {

    private final Process process;
    private final Path log;
    private final int port;

    private AgentProcess(Process process, Path log, int port) {
        this.process = process;
        this.log = log;
        this.port = port;
    }

    public static Path jar() {
        String jar = System.getProperty("agent.jar", "target/driver-alias-agent.jar");
        Path path = Path.of(jar);
        if (!Files.isRegularFile(path)) {
            throw new AssertionError("no agent jar at " + path + ": run the ITs through 'mvn verify'");
        }
        return path;
    }

    public static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** Starts {@code driver-alias-agent run} against the harness' Docker, on a free port. */
    public static AgentProcess start(DockerHarness docker, String... extraArgs) {
        int port = freePort();
        List<String> extra = List.of(extraArgs);
        List<String> cmd = new ArrayList<>(List.of(java(), "-jar", jar().toString(), "run",
                "--listen", "127.0.0.1:" + port, "--resync-interval", "5s"));
        if (!extra.contains("--docker-host")) {
            cmd.addAll(List.of("--docker-host", docker.host()));
        }
        if (!extra.contains("--host-lib-dir")) {
            cmd.addAll(TestImages.hostLibraryArguments());
        }
        cmd.addAll(extra);
        return start(cmd, port);
    }

    /**
     * Starts {@code driver-alias-agent run --runtime containerd} against the harness' containerd
     * (its socket and state directory), with the JVM options the agent ships and the test
     * drivers' host directories, on a free port.
     */
    public static AgentProcess startOnContainerd(ContainerdHarness containerd, String... extraArgs) {
        int port = freePort();
        List<String> cmd = new ArrayList<>(List.of(java()));
        cmd.addAll(ShippedJvm.commandLineOptions());
        cmd.addAll(List.of("-jar", jar().toString(), "run", "--listen", "127.0.0.1:" + port, "--resync-interval", "5s",
                "--containerd-address", containerd.address(), "--containerd-state", containerd.stateDir().toString()));
        // Where the release has NRI, the agent serves it, as --runtime auto does on such a node.
        cmd.addAll(containerd.release().hasNri() ? List.of("--runtime", "nri", "--nri-socket", containerd.nriSocket().toString())
                : List.of("--runtime", "containerd"));
        cmd.addAll(TestImages.hostLibraryArguments());
        cmd.addAll(List.of(extraArgs));
        return start(cmd, port);
    }

    /**
     * The agent as on a CRI-O node: {@code --runtime auto} finding no Docker and no containerd
     * socket (the addresses it is given lead nowhere) but the harness' NRI socket, so that it knows
     * the runtime through NRI alone; the JVM options it ships, the test drivers' host directories.
     */
    public static AgentProcess startOnNriAlone(ContainerdHarness containerd, String... extraArgs) {
        int port = freePort();
        List<String> cmd = new ArrayList<>(List.of(java()));
        cmd.addAll(ShippedJvm.commandLineOptions());
        cmd.addAll(List.of("-jar", jar().toString(), "run", "--listen", "127.0.0.1:" + port, "--resync-interval", "5s",
                "--runtime", "auto", "--docker-host", "unix:///nonexistent/docker.sock",
                "--containerd-address", "unix:///nonexistent/containerd.sock", "--nri-socket", containerd.nriSocket().toString()));
        cmd.addAll(TestImages.hostLibraryArguments());
        cmd.addAll(List.of(extraArgs));
        return start(cmd, port);
    }

    public static AgentProcess start(List<String> cmd, int port) {
        try {
            Path log = Files.createTempFile("daa-agent-", ".log");
            log.toFile().deleteOnExit();
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
            return new AgentProcess(p, log, port);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public int port() {
        return port;
    }

    public String log() {
        try {
            return Files.readString(log, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public List<String> logLines(String containing) {
        return log().lines().filter(l -> l.contains(containing)).toList();
    }

    public void awaitLog(String regex, Duration timeout) {
        Pattern p = Pattern.compile(regex);
        await("log line /" + regex + "/", timeout, () -> p.matcher(log()).find());
    }

    public void await(String what, Duration timeout, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (condition.getAsBoolean()) {
                return;
            }
            if (!process.isAlive()) {
                throw new AssertionError("agent exited (" + process.exitValue() + ") waiting for " + what + ":\n" + log());
            }
            DockerHarness.sleep(50);
        }
        throw new AssertionError("timed out after " + timeout.toMillis() + " ms waiting for " + what + ":\n" + log());
    }

    /** GET /metrics: the Prometheus text. */
    public String metrics() {
        try {
            java.net.http.HttpResponse<String> r = java.net.http.HttpClient.newHttpClient().send(
                    java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + port + "/metrics"))
                            .timeout(Duration.ofSeconds(10)).build(), java.net.http.HttpResponse.BodyHandlers.ofString());
            return r.body();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The value of one series of /metrics, {@code series} as scraped (name and labels), 0 when absent. */
    public double metric(String series) {
        for (String line : metrics().lines().toList()) {
            if (line.startsWith(series + " ")) {
                return Double.parseDouble(line.substring(series.length() + 1).trim().split(" ")[0]);
            }
        }
        return 0;
    }

    /** GET /readyz: its status code, or -1 when nothing answers within a second. */
    public int readyz() {
        try {
            return java.net.http.HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build().send(
                    java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + port + "/readyz"))
                            .timeout(Duration.ofSeconds(1)).build(), java.net.http.HttpResponse.BodyHandlers.discarding())
                    .statusCode();
        } catch (IOException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    public long pid() {
        return process.pid();
    }

    /** SIGKILL, as an OOM kill or a node's hard reset would: no shutdown of any kind. */
    public void kill() {
        process.destroyForcibly();
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** SIGTERM, as the kubelet sends; returns the exit code. */
    public int stop() {
        process.destroy();
        try {
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new AssertionError("agent did not stop within 30 s of SIGTERM:\n" + log());
            }
            return process.exitValue();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            process.destroyForcibly();
        }
    }

    public static int freePort() {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static void awaitTrue(String what, Duration timeout, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (condition.getAsBoolean()) {
                return;
            }
            DockerHarness.sleep(50);
        }
        throw new AssertionError("timed out after " + timeout.toMillis() + " ms waiting for " + what);
    }
}
