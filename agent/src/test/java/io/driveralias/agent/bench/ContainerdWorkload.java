package io.driveralias.agent.bench;

import static io.driveralias.agent.testing.TestImages.DEBIAN_LIB;

import io.driveralias.agent.testing.ContainerdHarness;
import io.driveralias.agent.testing.CriClient;
import io.driveralias.agent.testing.Processes;
import io.driveralias.agent.testing.TestImages;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The benchmark's containers on containerd, with the same probe, image and driver files as
 * {@link Workload}'s on Docker: made through the CRI as the kubelet makes them (a pod of one
 * container: RunPodSandbox, CreateContainer, then StartContainer, at once or after a pause), and
 * with {@code ctr run}. The probe's line is read from the CRI log, or from ctr's log file.
 */
final class ContainerdWorkload {

    private static final Pattern PROBE = Pattern.compile("probe first=(present|missing) exposure_us=(-?\\d+)");
    private static final List<String> ALIASES = TestImages.DRIVER.values().stream()
            .map(soname -> DEBIAN_LIB + "/" + soname).sorted().toList();

    /** A container started here, and where its probe writes. */
    record Started(String id, CriClient.Sandbox pod, Path ctrLog) {
    }

    private final ContainerdHarness containerd;
    private final String image;
    private final int probeTimeoutSeconds;
    private final Path logs;

    ContainerdWorkload(ContainerdHarness containerd, Path benchDir, int probeTimeoutSeconds) {
        this.containerd = containerd;
        this.probeTimeoutSeconds = probeTimeoutSeconds;
        this.image = containerd.image(ContainerdHarness.K8S, "probe", DEBIAN_LIB, root -> Processes.check(List.of("gcc",
                "-static", "-O2", "-o", root.resolve("probe").toString(), benchDir.resolve("probe.c").toString())), "/probe");
        try {
            this.logs = Files.createTempDirectory("daa-bench-ctr-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private List<String> command() {
        return command(probeTimeoutSeconds);
    }

    /** The probe, waiting at most {@code seconds} for the aliases (0: it looks once, at its first instruction, and polls not at all). */
    private static List<String> command(int seconds) {
        List<String> command = new ArrayList<>(List.of("/probe", String.valueOf(seconds)));
        command.addAll(ALIASES);
        return command;
    }

    private CriClient.Spec spec() {
        return spec(probeTimeoutSeconds);
    }

    private static CriClient.Spec spec(int probeSeconds) {
        CriClient.Spec spec = CriClient.Spec.of(command(probeSeconds).toArray(String[]::new));
        for (String file : TestImages.DRIVER.keySet()) {
            spec = spec.bind(TestImages.driverDir().resolve(file).toString(), DEBIAN_LIB + "/" + file, true);
        }
        return spec;
    }

    /**
     * A GPU pod's container as the device plugin and the kubelet make it (the driver files bound,
     * {@code NVIDIA_VISIBLE_DEVICES} set), or an ordinary one: the same image and probe, which looks
     * for the probe itself (there at once) and asks for nothing.
     */
    private static CriClient.Spec spec(boolean gpu, int probeSeconds) {
        return gpu ? spec(probeSeconds).env("NVIDIA_VISIBLE_DEVICES", "all")
                : CriClient.Spec.of("/probe", "0", "/probe");
    }

    /**
     * A container started through the CRI, and ({@link System#nanoTime()}) when its CreateContainer
     * call went out, and when its StartContainer call went out and returned.
     */
    record TimedStart(Started started, boolean gpu, long createdNanos, long calledNanos, long returnedNanos) {
        /** The StartContainer call's duration. */
        double millis() {
            return (returnedNanos - calledNanos) / 1e6;
        }

        /** The CreateContainer call's duration (StartContainer goes out as soon as it returns). */
        double createMillis() {
            return (calledNanos - createdNanos) / 1e6;
        }
    }

    /**
     * A pod of one container, GPU or not, as the kubelet starts it (StartContainer as soon as
     * CreateContainer returns), its StartContainer timed from the kubelet's side.
     */
    TimedStart timedPod(boolean gpu, int probeSeconds) {
        CriClient cri = containerd.cri();
        CriClient.Sandbox pod = cri.runPodSandbox(CriClient.Pod.named((gpu ? "bench-gpu-" : "bench-plain-")
                + UUID.randomUUID().toString().substring(0, 8)), "");
        long created = System.nanoTime();
        String id = cri.createContainer(pod, "probe", image, spec(gpu, probeSeconds));
        long called = System.nanoTime();
        cri.startContainer(id);
        long returned = System.nanoTime();
        return new TimedStart(new Started(id, pod, null), gpu, created, called, returned);
    }

    /**
     * Bursts of {@code size} GPU pods at once (each its own RunPodSandbox, CreateContainer and
     * StartContainer, as a kubelet given many pods at once starts them in parallel), {@code count} in all.
     */
    List<TimedStart> criBursts(int count, int size) throws Exception {
        List<TimedStart> started = new ArrayList<>();
        ExecutorService kubelet = Executors.newFixedThreadPool(size);
        try {
            for (int done = 0; done < count; done += size) {
                List<Future<TimedStart>> burst = new ArrayList<>();
                for (int i = 0; i < Math.min(size, count - done); i++) {
                    burst.add(kubelet.submit(() -> timedPod(true, probeTimeoutSeconds)));
                }
                for (Future<TimedStart> f : burst) {
                    started.add(f.get());
                }
            }
        } finally {
            kubelet.shutdown();
        }
        return started;
    }

    /** Pods of one container each, one after another: created, then started after {@code gap} (zero: at once, as the kubelet does). */
    List<Started> criCreateThenStart(int count, Duration gap) throws InterruptedException {
        List<Started> started = new ArrayList<>();
        CriClient cri = containerd.cri();
        for (int i = 0; i < count; i++) {
            CriClient.Sandbox pod = cri.runPodSandbox(CriClient.Pod.named("bench-" + UUID.randomUUID().toString().substring(0, 8)),
                    "");
            String id = cri.createContainer(pod, "probe", image, spec());
            if (!gap.isZero()) {
                Thread.sleep(gap.toMillis());
            }
            cri.startContainer(id);
            started.add(new Started(id, pod, null));
        }
        return started;
    }

    /** Pods without any container (RunPodSandbox alone), one after another: what a pod's sandbox costs the agent. */
    List<CriClient.Sandbox> sandboxes(int count) {
        List<CriClient.Sandbox> pods = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            pods.add(containerd.cri().runPodSandbox(CriClient.Pod.named("bench-sandbox-" + UUID.randomUUID().toString()
                    .substring(0, 8)), ""));
        }
        return pods;
    }

    void removePods(List<CriClient.Sandbox> pods) {
        pods.forEach(containerd.cri()::removePod);
    }

    /** {@code ctr run -d} one after another, the driver files bound ({@code --mount}). */
    List<Started> ctrRun(int count) {
        List<Started> started = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            // Hex ids, as the CRI's: the agent's log names a container by its first 12 characters.
            String id = UUID.randomUUID().toString().replace("-", "");
            Path log = logs.resolve(id + ".log");
            List<String> options = new ArrayList<>(List.of("--log-uri", "file://" + log));
            for (String file : TestImages.DRIVER.keySet()) {
                options.addAll(List.of("--mount", "type=bind,src=" + TestImages.driverDir().resolve(file) + ",dst=" + DEBIAN_LIB
                        + "/" + file + ",options=rbind:ro"));
            }
            containerd.ctrRun(ContainerdHarness.K8S, options, image, id, command().toArray(String[]::new));
            started.add(new Started(id, null, log));
        }
        return started;
    }

    /** Each container's probe result, waiting until it has reported (or given up). */
    Map<String, Workload.Probe> probes(List<Started> started) throws InterruptedException {
        Map<String, Workload.Probe> results = new HashMap<>();
        long deadline = System.nanoTime() + Duration.ofSeconds(probeTimeoutSeconds + 30L).toNanos();
        for (Started s : started) {
            while (true) {
                Matcher m = PROBE.matcher(output(s));
                if (m.find()) {
                    long us = Long.parseLong(m.group(2));
                    results.put(s.id(), new Workload.Probe(m.group(1).equals("present"), us < 0 ? -1 : us / 1000.0));
                    break;
                }
                if (System.nanoTime() > deadline) {
                    results.put(s.id(), new Workload.Probe(false, -1));
                    break;
                }
                Thread.sleep(100);
            }
        }
        return results;
    }

    private String output(Started s) {
        if (s.pod() != null) {
            return containerd.cri().logs(s.pod(), "probe");
        }
        try {
            return Files.isRegularFile(s.ctrLog()) ? Files.readString(s.ctrLog()) : "";
        } catch (IOException e) {
            return "";
        }
    }

    /**
     * Removes the pods and ctr's containers. A pod's removal is tried again once, as the kubelet
     * would: containerd 1.7 and 2.1 sometimes fail to stop a container whose shim connection just
     * closed, and succeed on the next try; a pod left after that is the harness's at its end.
     */
    void remove(List<Started> started) {
        for (Started s : started) {
            if (s.pod() != null) {
                try {
                    containerd.cri().removePod(s.pod());
                } catch (RuntimeException e) {
                    try {
                        Thread.sleep(500);
                    } catch (InterruptedException interrupted) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                    try {
                        containerd.cri().removePod(s.pod());
                    } catch (RuntimeException again) {
                        System.out.println("[bench] pod " + s.pod().id() + " not removed: " + again);
                    }
                }
            } else {
                containerd.remove(ContainerdHarness.K8S, s.id());
            }
        }
    }
}
