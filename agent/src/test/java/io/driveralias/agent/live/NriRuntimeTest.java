package io.driveralias.agent.live;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.nri.NriContainer;
import io.driveralias.agent.nri.NriMount;
import io.driveralias.agent.nri.NriPod;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A runtime known through NRI alone (CRI-O): what its calls tell becomes the descriptions the
 * repair, the reconcile and the agent's own-pod search read, and its connection is the runtime's.
 */
@Timeout(30)
class NriRuntimeTest {

    private static final Instant STARTED = Instant.parse("2026-12-05T01:00:00Z");
    private static final NriPod POD = new NriPod("sandbox-1", "train", "uid-1", "ml", "nvidia", 0);
    private static final String LIB = "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05";

    /** Processes 4242 and 7 exist; any other pid does not. */
    private final NriRuntime runtime = new NriRuntime(Path.of("/var/run/nri/nri.sock"), Set.of("nvidia"),
            pid -> pid == 4242 || pid == 7 ? Optional.of(STARTED) : Optional.empty());

    private static NriContainer container(String id, int pid, List<String> env, boolean devices, boolean cdi) {
        return new NriContainer(id, "sandbox-1", "main", "registry.example/cuda:12", NriContainer.State.CREATED, pid,
                Map.of("io.kubernetes.pod.name", "someone-else"), Map.of(), env,
                List.of(new NriMount(LIB, "bind", LIB, List.of("ro", "rbind"))), devices, cdi, 0, false);
    }

    @Test
    void aContainerIsDescribedFromWhatNriToldAndItsProcessOnceStarted() throws Exception {
        runtime.told(POD, container("c1", 0, List.of("NVIDIA_VISIBLE_DEVICES=all"), false, false));

        ContainerInfo created = runtime.describe("c1");
        assertThat(created.running()).isFalse();
        assertThat(created.name()).isEqualTo("main");
        assertThat(created.image()).isEqualTo("registry.example/cuda:12");
        assertThat(created.labels()).as("the pod from the runtime's sandbox, never the container's own labels")
                .containsEntry("io.kubernetes.pod.name", "train").containsEntry("io.kubernetes.pod.namespace", "ml")
                .containsEntry("io.kubernetes.pod.uid", "uid-1").containsEntry("io.kubernetes.container.name", "main");
        assertThat(created.mounts()).containsExactly(new ContainerInfo.Mount("bind", LIB, LIB, false));
        assertThat(created.gpu().requested()).as("NVIDIA_VISIBLE_DEVICES under a --gpu-runtime handler").isTrue();

        runtime.told(POD, container("c1", 4242, List.of("NVIDIA_VISIBLE_DEVICES=all"), false, false));
        ContainerInfo started = runtime.describe("c1");
        assertThat(started.running()).isTrue();
        assertThat(started.pid()).isEqualTo(4242);
        assertThat(started.startedAt()).contains(STARTED);
        assertThat(runtime.describeStarting("c1", 4242)).map(ContainerInfo::pid).contains(4242);
        assertThat(runtime.runningContainerIds()).containsExactly("c1");
        assertThat(runtime.runsPod("uid-1")).isTrue();
        assertThat(runtime.runsPod("uid-2")).isFalse();
        assertThat(runtime.runsPod("")).isFalse();
    }

    @Test
    void theGpuRequestFollowsWhatTheRuntimeSaysNotTheEnvironmentAlone() throws Exception {
        NriPod plainHandler = new NriPod("s", "p", "u", "ns", "", 0);
        runtime.told(plainHandler, container("env", 7, List.of("NVIDIA_VISIBLE_DEVICES=all"), false, false));
        runtime.told(plainHandler, container("nodes", 7, List.of(), true, false));
        runtime.told(plainHandler, container("cdi", 7, List.of(), false, true));

        assertThat(runtime.describe("env").gpu().requested()).as("the default handler is no GPU runtime").isFalse();
        assertThat(runtime.describe("nodes").gpu().requested()).as("NVIDIA's device nodes").isTrue();
        assertThat(runtime.describe("cdi").gpu().requested()).as("one of NVIDIA's CDI devices").isTrue();
    }

    @Test
    void anExitedProcessIsNotRunningAndAnUnknownContainerIsNone() {
        runtime.told(POD, container("gone", 999, List.of(), true, false));

        assertThat(runtime.runningContainerIds()).isEmpty();
        assertThatThrownBy(() -> runtime.describe("never-told")).isInstanceOf(ContainerRuntimeException.NoSuchContainer.class);
        runtime.told(POD, container("", 7, List.of(), true, false));
        assertThat(runtime.runningContainerIds()).as("no id, kept nowhere").isEmpty();
    }

    @Test
    void itIsReachableWhileTheRuntimeHasThePluginAndItsStreamEndsWhenThatChanges() throws Exception {
        assertThat(runtime.ping()).isFalse();
        assertThatThrownBy(runtime::connect).isInstanceOf(ContainerRuntimeException.Unreachable.class).hasMessageContaining("NRI");

        runtime.connection(Optional.of("cri-o 1.34.2 (NRI v0.10.0)"));
        assertThat(runtime.connect()).isEqualTo("cri-o 1.34.2 (NRI v0.10.0)");
        assertThat(runtime.ping()).isTrue();
        ContainerRuntime.EventStream stream = runtime.events(Optional.empty());
        CompletableFuture<Optional<ContainerRuntime.Event>> next = CompletableFuture.supplyAsync(() -> {
            try {
                return stream.next();
            } catch (ContainerRuntimeException e) {
                throw new IllegalStateException(e);
            }
        });
        Thread.sleep(200);
        assertThat(next).as("no events while connected: it waits").isNotDone();

        runtime.connection(Optional.empty());
        assertThat(next.get(5, TimeUnit.SECONDS)).isEmpty();
        assertThat(runtime.ping()).isFalse();
    }

    @Test
    void itForgetsTheLeastRecentlyToldPastItsBound() {
        for (int i = 0; i < NriRuntime.CAPACITY + 10; i++) {
            runtime.told(POD, container("c" + i, 7, List.of(), true, false));
        }
        assertThat(runtime.runningContainerIds()).hasSize(NriRuntime.CAPACITY).doesNotContain("c0");
    }
}
