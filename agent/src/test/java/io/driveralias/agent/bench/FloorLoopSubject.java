package io.driveralias.agent.bench;

import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.TestImages;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code bench/FloorLoop.java}: one raw inspect per start event, then symlink through
 * /proc/pid/root, SONAMEs given. What no safe agent can beat: the second baseline.
 */
final class FloorLoopSubject implements Subject {

    private static final Pattern REPAIRED = Pattern.compile("^repaired ([0-9a-f]{64}) (-?\\d+)$");

    private final DockerHarness docker;
    private final Path source;
    private Process process;
    private Path log;

    FloorLoopSubject(DockerHarness docker, Path source) {
        this.docker = docker;
        this.source = source;
    }

    @Override
    public String name() {
        return "floor loop";
    }

    @Override
    public long start() {
        try {
            log = Files.createTempFile("daa-floor-loop-", ".log");
            log.toFile().deleteOnExit();
            List<String> cmd = new ArrayList<>(List.of(AgentProcess.java(), "-XX:+UseSerialGC", source.toString(),
                    docker.host().replaceFirst("^unix://", "")));
            TestImages.DRIVER.forEach((file, soname) -> cmd.add(file + "=" + soname));
            long launched = System.nanoTime();
            process = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            long deadline = launched + 60_000_000_000L;
            while (!Files.readString(log).contains("ready")) {
                if (System.nanoTime() > deadline || !process.isAlive()) {
                    throw new AssertionError("the floor loop did not start: " + Files.readString(log));
                }
                Thread.sleep(10);
            }
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
        return AgentSubject.ProcStat.cpuSeconds(process.pid());
    }

    @Override
    public Map<String, Double> threadCpuSeconds() {
        return AgentSubject.ProcStat.threadCpuSeconds(process.pid());
    }

    @Override
    public double rssMiB() {
        return AgentSubject.ProcStat.statusKiB(process.pid(), "VmRSS") / 1024.0;
    }

    @Override
    public double peakRssMiB() {
        return AgentSubject.ProcStat.statusKiB(process.pid(), "VmHWM") / 1024.0;
    }

    @Override
    public void close() {
        if (process != null) {
            process.destroy();
            try {
                process.waitFor();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                process.destroyForcibly();
            }
        }
    }
}
