package io.driveralias.agent.containerd;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.ContainerdHarness;
import io.driveralias.agent.testing.SharedEngines;
import io.driveralias.agent.testing.ShippedJvm;
import io.driveralias.agent.testing.TestImages;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * What containerd's transport costs the agent, measured, not asserted: run on demand
 * ({@code mvn -B -o -pl agent verify -Dit.test=ContainerdTransportCost -Dtest=none
 * -Dsurefire.failIfNoSpecifiedTests=false}; the name ends in neither Test nor IT, so no suite runs
 * it). A {@link TransportCostProbe} in a JVM of its own, with the agent's shipped options (C1
 * only, the 32 MiB heap), describes a {@code ctr run} container of the private containerd 1.6 and
 * pings it, warm, then receives the events of {@code ctr} creating and removing containers; it
 * prints its figures, which this prints with the machine's load. Settings:
 * {@code -Dcost.warmup=500 -Dcost.rounds=5 -Dcost.calls=300 -Dcost.pairs=100}.
 */
@ResourceLock(SharedEngines.CONTAINERD)
class ContainerdTransportCost {

    @Test
    void measure() throws Exception {
        int warmup = Integer.getInteger("cost.warmup", 500);
        int rounds = Integer.getInteger("cost.rounds", 5);
        int calls = Integer.getInteger("cost.calls", 300);
        int pairs = Integer.getInteger("cost.pairs", 100);
        ContainerdHarness containerd = ContainerdHarness.get();
        String image = containerd.image(ContainerdHarness.K8S, "plain", TestImages.DEBIAN_LIB, root -> { }, "/bin/sh");
        String subject = "cost-" + UUID.randomUUID().toString().substring(0, 8);
        containerd.ctrRun(ContainerdHarness.K8S, image, subject, "/bin/sleep", "3600");
        System.out.println("load before: " + load());
        List<String> command = new ArrayList<>(List.of(AgentProcess.java()));
        command.addAll(ShippedJvm.commandLineOptions());
        command.addAll(List.of("--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                TransportCostProbe.class.getName(), containerd.address(), containerd.stateDir().toString(), subject,
                String.valueOf(warmup), String.valueOf(rounds), String.valueOf(calls), String.valueOf(2 * pairs)));
        Process probe = new ProcessBuilder(command).redirectErrorStream(true).start();
        try (BufferedReader out = new BufferedReader(new InputStreamReader(probe.getInputStream(), StandardCharsets.UTF_8));
             OutputStream in = probe.getOutputStream()) {
            List<String> figures = new ArrayList<>();
            for (String line = out.readLine(); line != null; line = out.readLine()) {
                System.out.println("probe: " + line);
                figures.add(line);
                if (line.equals("subscribed")) {
                    // Each pair: /containers/create, then /containers/delete (no task: runc is not involved).
                    for (int i = 0; i < pairs; i++) {
                        String id = "cost-event-" + i + "-" + subject;
                        containerd.run("-n", ContainerdHarness.K8S, "containers", "create", image, id);
                        containerd.run("-n", ContainerdHarness.K8S, "containers", "delete", id);
                    }
                }
                if (line.startsWith("event.allocatedKiB")) {
                    in.write('\n');
                    in.flush();
                }
            }
            assertThat(probe.waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(probe.exitValue()).as(String.join("\n", figures)).isZero();
            assertThat(figures).contains("done");
        } finally {
            probe.destroyForcibly();
            containerd.remove(ContainerdHarness.K8S, subject);
            System.out.println("load after: " + load());
        }
    }

    private static String load() {
        try {
            return java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg")).trim();
        } catch (java.io.IOException e) {
            return "?";
        }
    }
}
