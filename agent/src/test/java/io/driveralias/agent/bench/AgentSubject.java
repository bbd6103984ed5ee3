package io.driveralias.agent.bench;

import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The packaged agent, as the DaemonSet runs it (its JVM flags come from {@code jvmOptions}). */
final class AgentSubject implements Subject {

    /** "... in N ms", "... (repair N ms)" or "before the container started (N ms)": the agent's own time. */
    private static final Pattern REPAIRED = Pattern.compile(
            "repaired container ([0-9a-f]{12}) .*?(?: in |\\(repair |started \\()(\\d+) ms");

    private final List<String> jvmOptions;
    private final String name;
    private final List<String> options;
    private AgentProcess process;
    private Path gcLog;

    AgentSubject(DockerHarness docker, List<String> jvmOptions) {
        this(docker, jvmOptions, "agent", List.of());
    }

    /** {@code options}: more of the agent's own, e.g. {@code --before-start=false}. */
    AgentSubject(DockerHarness docker, List<String> jvmOptions, String name, List<String> options) {
        this(jvmOptions, name, java.util.stream.Stream.concat(java.util.stream.Stream.of("--docker-host", docker.host()),
                options.stream()).toList());
    }

    /** {@code options}: the agent's own, the runtimes it watches and where they are included. */
    AgentSubject(List<String> jvmOptions, String name, List<String> options) {
        this.jvmOptions = jvmOptions;
        this.name = name;
        this.options = options;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public long start() {
        int port = AgentProcess.freePort();
        List<String> cmd = new java.util.ArrayList<>(List.of(AgentProcess.java()));
        cmd.addAll(jvmOptions);
        try {
            // What a young collection found in eden: the allocation per container (see HeapAllocation).
            gcLog = Files.createTempFile("daa-agent-gc-", ".log");
            gcLog.toFile().deleteOnExit();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        cmd.add(HeapAllocation.logOption(gcLog));
        cmd.addAll(List.of("-jar", AgentProcess.jar().toString(), "run", "--listen", "127.0.0.1:" + port));
        cmd.addAll(io.driveralias.agent.testing.TestImages.hostLibraryArguments());
        cmd.addAll(options);
        // bench.agentArgs: more of the agent's own options for a look inside, e.g. --log-level debug.
        cmd.addAll(java.util.Arrays.stream(System.getProperty("bench.agentArgs", "").split("\\s+")).filter(a -> !a.isEmpty()).toList());
        long launched = System.nanoTime();
        process = AgentProcess.start(cmd, port);
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofMillis(200)).build();
        HttpRequest ready = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/readyz"))
                .timeout(Duration.ofSeconds(1)).build();
        process.await("/readyz 200", Duration.ofSeconds(60), () -> {
            try {
                return http.send(ready, HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
            } catch (IOException e) {
                return false;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        });
        return (System.nanoTime() - launched) / 1_000_000;
    }

    @Override
    public Map<String, Double> repairMillis() {
        Map<String, Double> byShortId = new HashMap<>();
        for (String line : process.logLines("repaired container")) {
            Matcher m = REPAIRED.matcher(line);
            if (m.find()) {
                byShortId.put(m.group(1), Double.parseDouble(m.group(2)));
            }
        }
        return byShortId;
    }

    @Override
    public double cpuSeconds() {
        return ProcStat.cpuSeconds(process.pid());
    }

    @Override
    public Map<String, Double> threadCpuSeconds() {
        return ProcStat.threadCpuSeconds(process.pid());
    }

    @Override
    public double allocatedBytes() {
        return HeapAllocation.allocatedSoFar(process.pid(), gcLog);
    }

    @Override
    public double rssMiB() {
        return ProcStat.statusKiB(process.pid(), "VmRSS") / 1024.0;
    }

    @Override
    public double peakRssMiB() {
        return ProcStat.statusKiB(process.pid(), "VmHWM") / 1024.0;
    }

    String log() {
        return process.log();
    }

    /** One series of its {@code /metrics} (name and labels as scraped); 0 when absent. */
    double metric(String series) {
        return process.metric(series);
    }

    /** Waits until {@code series} reads {@code value} (e.g. the NRI plugin registered). */
    void awaitMetric(String series, double value, Duration timeout) {
        process.await(series + " = " + value, timeout, () -> process.metric(series) == value);
    }

    long pid() {
        return process.pid();
    }

    /**
     * Where its resident memory is (proc(5): anonymous, file-backed, shared) and its thread count;
     * with {@code -XX:NativeMemoryTracking} in its options, the JVM's own summary follows.
     */
    String memory() {
        StringBuilder b = new StringBuilder(String.format("anonymous %.1f MiB, file-backed %.1f MiB, shared %.1f MiB; %d threads",
                ProcStat.statusKiB(process.pid(), "RssAnon") / 1024.0, ProcStat.statusKiB(process.pid(), "RssFile") / 1024.0,
                ProcStat.statusKiB(process.pid(), "RssShmem") / 1024.0, (long) ProcStat.statusKiB(process.pid(), "Threads")));
        if (jvmOptions.stream().anyMatch(o -> o.startsWith("-XX:NativeMemoryTracking="))) {
            Path jcmd = Path.of(AgentProcess.java()).resolveSibling("jcmd");
            b.append('\n').append(io.driveralias.agent.testing.Processes.run(List.of(jcmd.toString(), String.valueOf(process.pid()),
                    "VM.native_memory", "summary", "scale=KB"), 30).output());
        }
        return b.toString();
    }

    @Override
    public void close() {
        if (process != null) {
            process.stop();
        }
    }

    /** The agent's own figures from /proc: a test reading the host's /proc for a host process. */
    static final class ProcStat {
        private ProcStat() {
        }

        static double cpuSeconds(long pid) {
            try {
                String stat = Files.readString(Path.of("/proc", String.valueOf(pid), "stat"));
                String[] f = fields(stat);
                // Fields 14-17 of proc(5) (utime, stime, cutime, cstime), counted from "state" = 3.
                long ticks = Long.parseLong(f[11]) + Long.parseLong(f[12]) + Long.parseLong(f[13]) + Long.parseLong(f[14]);
                return ticks / 100.0;
            } catch (IOException e) {
                return Double.NaN;
            }
        }

        /** The fields of a {@code stat} line after the command name, from {@code state} on (proc(5) field 3). */
        private static String[] fields(String stat) {
            return stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        }

        /** CPU seconds of each live thread, grouped by name without its number ("repair-0" and "repair-1"). */
        static Map<String, Double> threadCpuSeconds(long pid) {
            Map<String, Double> byName = new java.util.TreeMap<>();
            try (var tasks = Files.list(Path.of("/proc", String.valueOf(pid), "task"))) {
                for (Path task : tasks.toList()) {
                    try {
                        String stat = Files.readString(task.resolve("stat"));
                        String name = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replaceAll("[#0-9]+$", "");
                        String[] f = fields(stat);
                        byName.merge(name, (Long.parseLong(f[11]) + Long.parseLong(f[12])) / 100.0, Double::sum);
                    } catch (IOException | RuntimeException e) {
                        // The thread ended while we looked.
                    }
                }
            } catch (IOException e) {
                return Map.of();
            }
            return byName;
        }

        /** CPU of every live process in session {@code sid}, children they waited for included. */
        static double sessionCpuSeconds(long sid) {
            double total = 0;
            try (var dirs = Files.list(Path.of("/proc"))) {
                for (Path dir : dirs.filter(p -> p.getFileName().toString().matches("\\d+")).toList()) {
                    try {
                        String stat = Files.readString(dir.resolve("stat"));
                        String[] f = fields(stat);
                        if (Long.parseLong(f[3]) == sid) {
                            total += (Long.parseLong(f[11]) + Long.parseLong(f[12]) + Long.parseLong(f[13])
                                    + Long.parseLong(f[14])) / 100.0;
                        }
                    } catch (IOException | RuntimeException e) {
                        // The process ended while we looked.
                    }
                }
            } catch (IOException e) {
                return Double.NaN;
            }
            return total;
        }

        static double statusKiB(long pid, String field) {
            try {
                for (String line : Files.readAllLines(Path.of("/proc", String.valueOf(pid), "status"))) {
                    if (line.startsWith(field + ":")) {
                        return Double.parseDouble(line.replaceAll("[^0-9]", ""));
                    }
                }
            } catch (IOException e) {
                return Double.NaN;
            }
            return Double.NaN;
        }
    }
}
