package io.driveralias.agent.bench;

import static io.driveralias.agent.testing.TestImages.DEBIAN_LIB;

import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.Processes;
import io.driveralias.agent.testing.TestImages;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The containers the benchmark starts: GPU containers whose only process is the exposure
 * probe, which reports how long after its own start every alias resolved.
 */
final class Workload {

    /** What one container's probe saw: aliases present at its first instruction, or after how long. */
    record Probe(boolean presentAtStart, double exposureMs) {
        boolean missed() {
            return exposureMs < 0;
        }
    }

    private static final Pattern PROBE = Pattern.compile("probe first=(present|missing) exposure_us=(-?\\d+)");
    private static final List<String> ALIASES = TestImages.DRIVER.values().stream()
            .map(soname -> DEBIAN_LIB + "/" + soname).sorted().toList();

    private final DockerHarness docker;
    private final String image;
    private final int probeTimeoutSeconds;

    Workload(DockerHarness docker, Path benchDir, int probeTimeoutSeconds) {
        this.docker = docker;
        this.probeTimeoutSeconds = probeTimeoutSeconds;
        this.image = TestImages.image(docker, "probe", DEBIAN_LIB, root -> Processes.check(List.of("gcc", "-static",
                "-O2", "-o", root.resolve("probe").toString(), benchDir.resolve("probe.c").toString())));
    }

    private List<String> runArgs(String verb) {
        List<String> args = new ArrayList<>(List.of(verb));
        if (verb.equals("run")) {
            args.add("-d");
        }
        args.addAll(TestImages.driverMounts(DEBIAN_LIB));
        args.addAll(List.of(image, "/probe", String.valueOf(probeTimeoutSeconds)));
        args.addAll(ALIASES);
        return args;
    }

    /** {@code docker run -d}, one after another. */
    List<String> sequential(int count) {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            ids.add(docker.run(runArgs("run").toArray(String[]::new)));
        }
        return ids;
    }

    /** {@code docker run -d} in bursts of {@code size} at once. */
    List<String> bursts(int count, int size) throws Exception {
        List<String> ids = Collections.synchronizedList(new ArrayList<>());
        ExecutorService pool = Executors.newFixedThreadPool(size);
        try {
            for (int done = 0; done < count; done += size) {
                List<Future<String>> burst = new ArrayList<>();
                for (int i = 0; i < Math.min(size, count - done); i++) {
                    burst.add(pool.submit(() -> docker.run(runArgs("run").toArray(String[]::new))));
                }
                for (Future<String> f : burst) {
                    ids.add(f.get());
                }
            }
        } finally {
            pool.shutdown();
        }
        return ids;
    }

    /** {@code docker create}, a pause, {@code docker start}: the kubelet's rhythm. */
    List<String> createThenStart(int count, Duration gap) throws InterruptedException {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            String id = docker.run(runArgs("create").toArray(String[]::new));
            Thread.sleep(gap.toMillis());
            docker.run("start", id);
            ids.add(id);
        }
        return ids;
    }

    /**
     * Restarts dockerd, then starts containers at once, the first half all together, before a
     * watcher that lost its event stream has resubscribed: whatever was watching must catch up.
     */
    List<String> acrossRestart(int count) throws Exception {
        docker.stopDaemon();
        docker.startDaemon();
        List<String> ids = new ArrayList<>(bursts(count / 2, Math.max(1, count / 2)));
        ids.addAll(sequential(count - count / 2));
        return ids;
    }

    /** Each container's probe result, waiting until it has reported (or given up). */
    Map<String, Probe> probes(List<String> ids) throws InterruptedException {
        Map<String, Probe> results = new HashMap<>();
        long deadline = System.nanoTime() + Duration.ofSeconds(probeTimeoutSeconds + 30L).toNanos();
        for (String id : ids) {
            while (true) {
                Matcher m = PROBE.matcher(docker.tryRun("logs", id).output());
                if (m.find()) {
                    long us = Long.parseLong(m.group(2));
                    results.put(id, new Probe(m.group(1).equals("present"), us < 0 ? -1 : us / 1000.0));
                    break;
                }
                if (System.nanoTime() > deadline) {
                    results.put(id, new Probe(false, -1));
                    break;
                }
                Thread.sleep(100);
            }
        }
        return results;
    }

    /** Removes the benchmark's containers, many at a time. */
    void remove(List<String> ids) {
        for (int i = 0; i < ids.size(); i += 50) {
            List<String> args = new ArrayList<>(List.of("rm", "-f"));
            args.addAll(ids.subList(i, Math.min(ids.size(), i + 50)));
            docker.tryRun(args.toArray(String[]::new));
        }
    }

    static Path benchDir() {
        Path dir = Path.of(System.getProperty("bench.dir", "../bench"));
        if (!Files.isRegularFile(dir.resolve("probe.c"))) {
            throw new AssertionError("no bench/probe.c under " + dir.toAbsolutePath());
        }
        return dir;
    }
}
