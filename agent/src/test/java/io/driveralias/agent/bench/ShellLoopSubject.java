package io.driveralias.agent.bench;

import io.driveralias.agent.testing.DockerHarness;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** {@code bench/shell-loop.sh}: docker events, docker inspect, nsenter ... ln -sf per container. */
final class ShellLoopSubject implements Subject {

    private static final Pattern REPAIRED = Pattern.compile("^repaired ([0-9a-f]{64}) (-?\\d+)$");

    private final DockerHarness docker;
    private final Path script;
    private Process process;
    private Path log;

    ShellLoopSubject(DockerHarness docker, Path script) {
        this.docker = docker;
        this.script = script;
    }

    @Override
    public String name() {
        return "shell loop";
    }

    @Override
    public long start() {
        try {
            log = Files.createTempFile("daa-shell-loop-", ".log");
            log.toFile().deleteOnExit();
            long launched = System.nanoTime();
            process = new ProcessBuilder("setsid", "bash", script.toString(), docker.host())
                    .redirectErrorStream(true).redirectOutput(log.toFile()).start();
            // It has no readiness signal: `docker events` attaches within a few hundred ms.
            Thread.sleep(1000);
            return (System.nanoTime() - launched) / 1_000_000;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    @Override
    public Map<String, Double> repairMillis() {
        Map<String, Double> byShortId = new HashMap<>();
        try {
            for (String line : Files.readAllLines(log)) {
                Matcher m = REPAIRED.matcher(line.trim());
                if (m.matches()) {
                    byShortId.put(m.group(1).substring(0, 12), Double.parseDouble(m.group(2)));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return byShortId;
    }

    @Override
    public double cpuSeconds() {
        // Every process of the loop's session, each with the children it has waited for.
        return AgentSubject.ProcStat.sessionCpuSeconds(process.pid());
    }

    @Override
    public double rssMiB() {
        return Double.NaN;
    }

    @Override
    public double peakRssMiB() {
        return Double.NaN;
    }

    @Override
    public void close() {
        if (process != null) {
            // setsid made it a process group leader: end the loop and its docker events.
            try {
                new ProcessBuilder("kill", "--", "-" + process.pid()).inheritIO().start().waitFor();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            process.destroyForcibly();
        }
    }
}
