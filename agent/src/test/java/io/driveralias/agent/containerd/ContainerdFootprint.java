package io.driveralias.agent.containerd;

import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.ContainerdHarness;
import io.driveralias.agent.testing.SharedEngines;
import io.driveralias.agent.testing.TestImages;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * The packaged agent's memory watching containerd, as docs/footprint.md ("Watching containerd")
 * measures it, measured, not asserted: run on demand ({@code mvn -B -o -pl agent verify
 * -Dit.test=ContainerdFootprint -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false}, and
 * {@code -Dfootprint.jar=...} for another build of the agent). The jar with the shipped options
 * ({@code run --kubernetes off --runtime containerd}) on the private containerd 1.6, ready, then
 * {@code -Dfootprint.containers=50} {@code ctr run -d} one after another; RSS, threads and CPU by
 * thread read from {@code /proc} 15 and 35 s after the last.
 */
@ResourceLock(SharedEngines.CONTAINERD)
class ContainerdFootprint {

    @Test
    void measure() throws Exception {
        int count = Integer.getInteger("footprint.containers", 50);
        String other = System.getProperty("footprint.jar");
        if (other != null) {
            System.setProperty("agent.jar", other);
        }
        ContainerdHarness containerd = ContainerdHarness.get();
        String image = containerd.image(ContainerdHarness.K8S, "plain", TestImages.DEBIAN_LIB, root -> { }, "/bin/sh");
        System.out.println("jar " + AgentProcess.jar() + " " + Files.size(AgentProcess.jar()) + " bytes; load before "
                + Files.readString(Path.of("/proc/loadavg")).trim());
        List<String> ids = new ArrayList<>();
        try (AgentProcess agent = AgentProcess.startOnContainerd(containerd, "--kubernetes", "off")) {
            agent.await("ready", Duration.ofSeconds(60), () -> agent.readyz() == 200);
            Thread.sleep(5000);
            System.out.println("ready: " + sample(agent.pid()));
            for (int i = 0; i < count; i++) {
                String id = "footprint-" + i + "-" + UUID.randomUUID().toString().substring(0, 6);
                containerd.ctrRun(ContainerdHarness.K8S, image, id, "/bin/sleep", "600");
                ids.add(id);
            }
            Thread.sleep(15_000);
            System.out.println("15 s after: " + sample(agent.pid()));
            Thread.sleep(20_000);
            System.out.println("35 s after: " + sample(agent.pid()));
            System.out.println("cpu by thread (s): " + threadCpu(agent.pid()));
        } finally {
            ids.forEach(id -> containerd.remove(ContainerdHarness.K8S, id));
            System.out.println("load after " + Files.readString(Path.of("/proc/loadavg")).trim());
        }
    }

    /** RSS (total, anonymous, file-backed) and threads, from /proc/PID/status. */
    private static String sample(long pid) throws IOException {
        Map<String, String> status = new TreeMap<>();
        for (String line : Files.readAllLines(Path.of("/proc", String.valueOf(pid), "status"))) {
            String[] kv = line.split(":\\s+", 2);
            if (List.of("VmRSS", "RssAnon", "RssFile", "VmHWM", "Threads").contains(kv[0])) {
                status.put(kv[0], kv[1].trim());
            }
        }
        return status.toString();
    }

    private static Map<String, Double> threadCpu(long pid) throws IOException {
        Map<String, Double> byName = new TreeMap<>();
        try (var tasks = Files.list(Path.of("/proc", String.valueOf(pid), "task"))) {
            for (Path task : tasks.toList()) {
                String stat = Files.readString(task.resolve("stat"));
                String name = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replaceAll("[#0-9-]+$", "");
                String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                byName.merge(name, (Long.parseLong(f[11]) + Long.parseLong(f[12])) / 100.0, Double::sum);
            }
        }
        return byName;
    }
}
