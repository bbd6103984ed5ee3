package io.driveralias.agent.nri;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.nri.FakeNriRuntime.Peer;
import io.driveralias.agent.nri.FakeNriRuntime.Reply;
import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.ShippedJvm;
import io.driveralias.agent.testing.nri.Container;
import io.driveralias.agent.testing.nri.Mount;
import io.driveralias.agent.testing.nri.PodSandbox;
import io.driveralias.agent.testing.nri.StateChangeEvent;
import io.driveralias.agent.testing.nri.SynchronizeRequest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The plugin in a JVM started with exactly the agent's shipped options (32 MiB heap, serial GC,
 * exit on OutOfMemoryError), fed by a fake runtime the largest hostile messages NRI allows (4 MiB
 * each): a Synchronize of three full parts, then StartContainer after StartContainer of containers
 * whose environment value is 3.8 MB, whose kubelet-style labels number 150,000 or weigh 3.8 MB, or
 * whose bind mounts number 30,000. The JVM must survive, every call be answered with success, and
 * the decoded records be marked incomplete where a bound cut them. Prints the probe's peak heap
 * (an upper bound: garbage included) and its direct memory (the plugin's buffers).
 */
@Timeout(300)
class NriShippedHeapTest {

    private static final int STARTS = 40;
    private static final int NEAR_MAX = 3_800_000;

    @TempDir
    Path dir;

    /** A container of about {@code NEAR_MAX / share} bytes, of one of five hostile kinds. */
    static Container.Builder hostile(int kind, String id, int share) {
        PodSandbox pod = NriInputs.pod("hostile");
        Container.Builder c = NriInputs.gpuContainer(id, pod, 1000);
        switch (kind) {
            case 0 -> c.addEnv("BLOB=" + "e".repeat(NEAR_MAX / share));
            case 1 -> {
                for (int i = 0; i < 940 / share; i++) {
                    c.putLabels("io.kubernetes.heavy-" + i, "l".repeat(4000));
                }
            }
            case 2 -> {
                for (int i = 0; i < 150_000 / share; i++) {
                    c.putLabels("io.kubernetes.t" + i, "");
                }
            }
            case 3 -> {
                for (int i = 0; i < 900 / share; i++) {
                    c.addEnv("NVIDIA_FLOOD_" + i + "=" + "n".repeat(4050));
                }
            }
            default -> {
                for (int i = 0; i < 30_000 / share; i++) {
                    c.addMounts(Mount.newBuilder().setDestination("/usr/lib/x86_64-linux-gnu/flood/" + i).setType("bind")
                            .setSource("/var/lib/kubelet/pods/flood/volumes/" + i).addOptions("ro").addOptions("rbind"));
                }
            }
        }
        return c;
    }

    @Test
    void theLargestHostileMessagesFitTheShippedHeap() throws Exception {
        Path socket = dir.resolve("nri.sock");
        try (FakeNriRuntime runtime = new FakeNriRuntime(socket)) {
            Process probe = startProbe(socket);
            try {
                Peer peer = runtime.acceptConfigured(Duration.ofSeconds(60), 2000);
                for (int part = 0; part < 3; part++) {
                    SynchronizeRequest.Builder sync = SynchronizeRequest.newBuilder().setMore(part < 2);
                    for (int k = 0; k < 5; k++) {
                        sync.addContainers(hostile(k, "sync-" + part + "-" + k, 6));
                    }
                    assertThat(sync.build().getSerializedSize()).isBetween(3_000_000, 4_190_000);
                    sync.addPods(NriInputs.pod("hostile"));
                    Reply reply = peer.synchronize(sync.build());
                    assertThat(reply.ok()).as("Synchronize part " + part).isTrue();
                }
                List<byte[]> payloads = new ArrayList<>();
                for (int k = 0; k < 5; k++) {
                    byte[] payload = StateChangeEvent.newBuilder().setEvent(FakeNriRuntime.START_CONTAINER).setPod(NriInputs.pod("hostile"))
                            .setContainer(hostile(k, "start-" + k, 1)).build().toByteArray();
                    assertThat(payload.length).isBetween(3_000_000, 4_190_000);
                    payloads.add(payload);
                }
                long slowest = 0;
                for (int i = 0; i < STARTS; i++) {
                    Reply reply = Peer.await(peer.send(FakeNriRuntime.PLUGIN, "StateChange", payloads.get(i % 5), 2_000_000_000L),
                            Duration.ofSeconds(30));
                    assertThat(reply.ok()).isTrue();
                    slowest = Math.max(slowest, reply.nanos());
                }
                Reply exit = peer.startContainer(NriInputs.pod("x"), NriInputs.plainContainer("exit", NriInputs.pod("x"), 1)
                        .setName("probe-exit").build(), Duration.ofSeconds(30));
                assertThat(exit.ok()).isTrue();
                assertThat(probe.waitFor(60, TimeUnit.SECONDS)).isTrue();
                String out = new String(probe.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                System.out.print(out);
                System.out.printf("[nri-heap] %d StartContainer of 3-4 MiB hostile containers; slowest answer %.1f ms%n", STARTS,
                        slowest / 1e6);
                assertThat(probe.exitValue()).as("the probe JVM (shipped options) survived:\n" + out).isZero();
                assertThat(out).doesNotContain("OutOfMemoryError").contains("synchronized parts=3 containers=15 incomplete=12");
                Matcher m = Pattern.compile("starts=(\\d+) incomplete=(\\d+) synced=(\\d+) notServed=(\\d+) peakHeapKiB=(\\d+)")
                        .matcher(out);
                assertThat(m.find()).isTrue();
                assertThat(Integer.parseInt(m.group(1))).isEqualTo(STARTS + 1);
                // Every hostile kind but the first (whose huge value is not kept at all) is cut by a bound.
                assertThat(Integer.parseInt(m.group(2))).isEqualTo(STARTS * 4 / 5);
                assertThat(Integer.parseInt(m.group(4))).isZero();
            } finally {
                probe.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    private Process startProbe(Path socket) throws IOException {
        List<String> command = new ArrayList<>(List.of(AgentProcess.java()));
        command.addAll(ShippedJvm.commandLineOptions());
        command.addAll(List.of("--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                NriHeapProbe.class.getName(), socket.toString()));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        p.getOutputStream().close();
        return p;
    }
}
