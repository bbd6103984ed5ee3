package io.driveralias.agent.it;

import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.ContainerdHarness;
import io.driveralias.agent.testing.CriClient;
import io.driveralias.agent.testing.Processes;
import io.driveralias.agent.testing.RealDriver;
import io.driveralias.agent.testing.RealDriver.Arch;
import io.driveralias.agent.testing.cri.ContainerState;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Containers of the debootstrapped Debian image in the harness's containerd, made as the kubelet
 * makes them (through the CRI: a pod's sandbox, then CreateContainer and StartContainer), whose
 * first instructions look for the driver and load it ({@link RealContainers#FIRST_INSTRUCTIONS});
 * what they printed is read from their CRI log file, as the kubelet reads it.
 */
final class CriProbes implements AutoCloseable {

    static final String LIB_DIR = RealContainers.LIB_DIR;

    /** A container made through the CRI: its pod, its name there, its id. */
    record Probe(CriClient.Sandbox pod, String name, String id) {
        String shortId() {
            return id.substring(0, 12);
        }
    }

    private final ContainerdHarness containerd;
    private final String image;
    private final List<CriClient.Sandbox> pods = Collections.synchronizedList(new ArrayList<>());

    CriProbes(ContainerdHarness containerd) {
        this.containerd = containerd;
        this.image = containerd.debianImage(ContainerdHarness.K8S);
    }

    String image() {
        return image;
    }

    CriClient cri() {
        return containerd.cri();
    }

    /** A pod's sandbox, under {@code handler} ("" is the default runtime, runc); removed at {@link #close}. */
    CriClient.Sandbox pod(String name, String handler) {
        CriClient.Sandbox pod = cri().runPodSandbox(CriClient.Pod.named(name), handler);
        pods.add(pod);
        return pod;
    }

    /** The probing command, nothing declared. */
    static CriClient.Spec probing() {
        List<String> command = RealContainers.FIRST_INSTRUCTIONS;
        return CriClient.Spec.of(command.toArray(String[]::new));
    }

    /** CRI mounts of NVIDIA's real versioned files into the library directory, and of nvidia-smi, read-only. */
    static CriClient.Spec declared(CriClient.Spec spec) {
        CriClient.Spec with = spec;
        for (Path lib : RealDriver.versionedLibraries(Arch.AMD64)) {
            with = with.bind(lib.toString(), LIB_DIR + "/" + lib.getFileName(), true);
        }
        return with.bind(RealDriver.nvidiaSmi(Arch.AMD64).toString(), "/usr/bin/nvidia-smi", true);
    }

    /** {@code ctr run} options that bind the same files ({@code --mount}). */
    static List<String> ctrBinds() {
        List<String> options = new ArrayList<>();
        for (Path lib : RealDriver.versionedLibraries(Arch.AMD64)) {
            options.addAll(List.of("--mount", "type=bind,src=" + lib + ",dst=" + LIB_DIR + "/" + lib.getFileName()
                    + ",options=rbind:ro"));
        }
        options.addAll(List.of("--mount", "type=bind,src=" + RealDriver.nvidiaSmi(Arch.AMD64)
                + ",dst=/usr/bin/nvidia-smi,options=rbind:ro"));
        return options;
    }

    /**
     * A pod of one container, as most GPU pods are: RunPodSandbox, then the container, named
     * {@code main}. Containers of one pod share its shim, which answers nothing about one while it
     * creates another: a pod each keeps the measure about the agent, not about that queue.
     */
    Probe pod(String name, String handler, CriClient.Spec spec) {
        return run(pod(name, handler), "main", spec);
    }

    /**
     * {@link #pod(String, String, CriClient.Spec)} as the kubelet retries it while its runtime is
     * away: a sandbox or container that failed is made again (a new attempt, a new name), a start
     * that failed is started again unless the container left the created state meanwhile.
     */
    Probe podRetrying(String name, CriClient.Spec spec, Duration patience) throws InterruptedException {
        long deadline = System.nanoTime() + patience.toNanos();
        for (int attempt = 0; ; attempt++) {
            try {
                CriClient.Sandbox pod = pod(name + "-" + attempt, "");
                String id = cri().createContainer(pod, "main", image, spec);
                startRetrying(id, deadline);
                return new Probe(pod, "main", id);
            } catch (RuntimeException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(200);
            }
        }
    }

    private void startRetrying(String id, long deadline) throws InterruptedException {
        while (true) {
            try {
                cri().startContainer(id);
                return;
            } catch (RuntimeException e) {
                Thread.sleep(200);
                try {
                    if (cri().containerStatus(id).getState() != ContainerState.CONTAINER_CREATED) {
                        return;
                    }
                } catch (RuntimeException away) {
                    // containerd is still away: try again
                }
                if (System.nanoTime() > deadline) {
                    throw e;
                }
            }
        }
    }

    /** CreateContainer, then StartContainer at once, as the kubelet starts a pod's container. */
    Probe run(CriClient.Sandbox pod, String name, CriClient.Spec spec) {
        return run(pod, name, image, spec);
    }

    Probe run(CriClient.Sandbox pod, String name, String image, CriClient.Spec spec) {
        String id = cri().createContainer(pod, name, image, spec);
        cri().startContainer(id);
        return new Probe(pod, name, id);
    }

    /** What the probe's first instructions printed (its CRI log), once through. */
    String firstInstructions(Probe probe) {
        AgentProcess.awaitTrue("the first instructions of " + probe.name(), Duration.ofSeconds(60),
                () -> cri().logs(probe.pod(), probe.name()).contains("end\n"));
        return cri().logs(probe.pod(), probe.name());
    }

    /** nvidia-smi found NVML (no GPU here: it then finds no device) and libcuda.so.1 loaded: cuInit returned 100. */
    static boolean loads(String output) {
        return output.contains("nvidia-smi=") && !output.contains("nvidia-smi=" + RealContainers.NVML_NOT_FOUND)
                && !output.contains("nvidia-smi=127") && output.contains("cuInit 100");
    }

    /** {@code ldconfig -p} listed libcuda.so.1: NVIDIA's CUDA images decide with it that the driver is there. */
    static boolean cached(String output) {
        return output.contains("cache=yes");
    }

    Processes.Result exec(String id, String... command) {
        return containerd.exec(ContainerdHarness.K8S, id, command);
    }

    /** Later, from inside: the loader cache lists libcuda.so.1 and the alias leads to the driver's file. */
    boolean repairedWithCache(String id) {
        String target = "libcuda.so." + RealDriver.version(Arch.AMD64);
        Processes.Result r = exec(id, "sh", "-c", "ldconfig -p | grep -q 'libcuda.so.1 ' && readlink " + LIB_DIR + "/libcuda.so.1");
        return r.exitCode() == 0 && r.output().trim().equals(target);
    }

    /**
     * How many of {@code probes} had the driver at their first instruction: listed by ldconfig -p,
     * and loaded. Each that did not is printed, with what the agent said of it.
     */
    int atFirstInstruction(List<Probe> probes, AgentProcess agent) {
        return probes.size() - lackingAtFirstInstruction(probes, agent).size();
    }

    /** Those of {@code probes} whose first instructions did not find the driver listed and loaded, each printed. */
    List<Probe> lackingAtFirstInstruction(List<Probe> probes, AgentProcess agent) {
        List<Probe> lacking = new ArrayList<>();
        for (Probe p : probes) {
            String out = firstInstructions(p);
            if (!(CriProbes.cached(out) && CriProbes.loads(out))) {
                lacking.add(p);
                missed(p.shortId(), out, agent);
            }
        }
        return lacking;
    }

    static void missed(String shortId, String output, AgentProcess agent) {
        System.out.printf("[containerd-live] not at the first instruction: %s printed %s; the agent: %s%n", shortId,
                output.replace('\n', ' '), String.join(" | ", agent.logLines(shortId)));
    }

    /** How many the agent reported "repaired ... before start" (the start path found everything in place). */
    static int reportedBeforeStart(AgentProcess agent, List<String> shortIds) {
        int before = 0;
        for (String id : shortIds) {
            agent.awaitLog("repaired container " + id, Duration.ofSeconds(30));
            if (agent.logLines("repaired container " + id + " (").stream().anyMatch(l -> l.contains(") before start: "))) {
                before++;
            } else {
                System.out.printf("[containerd-live] not reported before start: %s: %s%n", id,
                        String.join(" | ", agent.logLines(id)));
            }
        }
        return before;
    }

    @Override
    public void close() {
        List<CriClient.Sandbox> all;
        synchronized (pods) {
            all = List.copyOf(pods);
            pods.clear();
        }
        for (CriClient.Sandbox pod : all) {
            try {
                cri().removePod(pod);
            } catch (RuntimeException e) {
                // Best effort: the harness removes everything at the JVM's end.
            }
        }
    }
}
