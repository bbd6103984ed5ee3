package io.driveralias.agent.containerd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.Any;
import io.driveralias.agent.containerd.api.ContainerCreate;
import io.driveralias.agent.containerd.api.PublishRequest;
import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.ContainerScope;
import io.driveralias.agent.core.PodRef;
import io.driveralias.agent.fs.ProcessStartTime;
import io.driveralias.agent.live.ContainerRuntime.Action;
import io.driveralias.agent.live.ContainerRuntime.Event;
import io.driveralias.agent.live.ContainerRuntime;
import io.driveralias.agent.live.ContainerRuntimeException;
import io.driveralias.agent.testing.ContainerdHarness;
import io.driveralias.agent.testing.CriClient;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.SharedEngines;
import io.driveralias.agent.testing.TestImages;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * {@link ContainerdRuntime} against a real private containerd 1.6 with its CRI plugin
 * ({@link ContainerdHarness}): pods and containers made through the CRI as the kubelet makes
 * them, and with {@code ctr}.
 */
@ResourceLock(SharedEngines.DOCKER)
@ResourceLock(SharedEngines.CONTAINERD)
class ContainerdRuntimeIT {

    private static final Duration WAIT = Duration.ofSeconds(30);
    private static ContainerdHarness containerd;
    private static String image;
    private final List<AutoCloseable> cleanup = new ArrayList<>();

    @BeforeAll
    static void containerd() {
        containerd = ContainerdHarness.get();
        image = containerd.image(ContainerdHarness.K8S, "plain", TestImages.DEBIAN_LIB, root -> { }, "/bin/sh");
    }

    @AfterEach
    void cleanUp() throws Exception {
        for (AutoCloseable c : cleanup.reversed()) {
            c.close();
        }
    }

    private static ContainerdRuntime runtime(String address, String namespace) {
        return new ContainerdRuntime(new ContainerdRuntime.Settings(address, namespace, containerd.stateDir().toString(), "/proc",
                Set.of("nvidia")), new ProcessStartTime("/proc", Clock.systemUTC()));
    }

    private ContainerdRuntime runtime() {
        ContainerdRuntime runtime = runtime(containerd.address(), ContainerdHarness.K8S);
        cleanup.add(runtime);
        return runtime;
    }

    private CriClient.Sandbox pod(String name, String handler) {
        CriClient.Sandbox pod = containerd.cri().runPodSandbox(CriClient.Pod.named(name), handler);
        cleanup.add(() -> containerd.cri().removePod(pod));
        return pod;
    }

    private static CriClient.Spec gpuSpec(String... command) {
        return CriClient.Spec.of(command).env("NVIDIA_VISIBLE_DEVICES", "all").env("NVIDIA_DRIVER_CAPABILITIES", "compute,utility")
                .annotation("cdi.k8s.io/nvidia-device-plugin_uuid", "nvidia.com/gpu=0");
    }

    @Test
    void connectsAndAnswersPings() throws ContainerRuntimeException {
        ContainerdRuntime runtime = runtime();
        assertThat(runtime.connect()).startsWith("containerd 1.");
        assertThat(runtime.ping()).isTrue();
        assertThat(runtime.name()).isEqualTo("containerd");
        assertThat(runtime.endpoint()).isEqualTo(containerd.address());
    }

    @Test
    void theWarmUpGoesThroughADescriptionAndChangesNothing() throws ContainerRuntimeException {
        ContainerdRuntime runtime = runtime();
        runtime.connect();
        List<String> before = runtime.runningContainerIds();
        runtime.warmUp();
        assertThat(runtime.runningContainerIds()).isEqualTo(before);
        assertThatThrownBy(() -> runtime.describe("driver-alias-warm-up"))
                .isInstanceOf(ContainerRuntimeException.NoSuchContainer.class);
    }

    @Test
    void aCriGpuContainerBeforeAndAfterItStartsAndItsSandbox() throws Exception {
        ContainerdRuntime runtime = runtime();
        CriClient.Sandbox pod = pod("gpu-describe", "nvidia");
        String id = containerd.cri().createContainer(pod, "cuda", image, gpuSpec("/bin/sleep", "60")
                .bind("/etc/hostname", "/etc/host-name", true));

        ContainerInfo created = runtime.describe(id);
        assertThat(created.running()).isFalse();
        assertThat(created.pid()).isZero();
        assertThat(created.startedAt()).isEmpty();
        assertThat(created.sandbox()).isFalse();
        assertThat(created.name()).isEqualTo("cuda");
        assertThat(ContainerScope.podOf(created.labels())).contains(new PodRef("default", "gpu-describe", pod.pod().uid(), "cuda"));
        assertThat(created.gpu().gpuRuntime()).as("the nvidia handler's BinaryName").isTrue();
        assertThat(created.gpu().visibleDevices()).contains("all");
        assertThat(created.gpu().deviceRequest()).as("the CDI annotation").isTrue();
        assertThat(created.gpu().addsDriverFiles()).isTrue();
        assertThat(created.mounts()).contains(new ContainerInfo.Mount("bind", "/etc/hostname", "/etc/host-name", false));
        assertThat(created.storage()).isEqualTo("overlayfs");
        ContainerInfo.OverlayLayers layers = created.overlay().orElseThrow();
        assertThat(Path.of(layers.upperDir())).as("the writable layer, before any mount").isDirectory().isEmptyDirectory();
        for (String lower : layers.lowerDir().split(":")) {
            assertThat(Path.of(lower).resolve("bin/busybox")).as(lower).isRegularFile();
        }
        assertThat(layers.mergedDir()).isEqualTo(containerd.stateDir() + "/io.containerd.runtime.v2.task/k8s.io/" + id + "/rootfs");
        assertThat(runtime.peekCreated(id)).as("nothing to peek at: describe never waits").isEmpty();

        ContainerInfo sandbox = runtime.describe(pod.id());
        assertThat(sandbox.sandbox()).isTrue();
        assertThat(sandbox.running()).isTrue();
        assertThat(sandbox.name()).isEqualTo("gpu-describe");
        assertThat(new ContainerScope(List.of(), List.of()).exclusion(sandbox)).contains("pod sandbox");

        Instant beforeStart = Instant.now();
        containerd.cri().startContainer(id);
        ContainerInfo started = runtime.describe(id);
        assertThat(started.running()).isTrue();
        assertThat(started.pid()).isPositive();
        assertThat(started.startedAt()).hasValueSatisfying(at -> assertThat(Duration.between(beforeStart, at).abs())
                .isLessThan(Duration.ofSeconds(2)));
        assertThat(runtime.describe(id).startedAt()).as("the same process, the same start").isEqualTo(started.startedAt());
        assertThat(Path.of(layers.mergedDir()).resolve("bin/busybox")).as("the root mounted where said").isRegularFile();
        assertThat(runtime.peekCreated(id)).isEmpty();
        assertThat(runtime.runningContainerIds()).contains(id, pod.id());
    }

    @Test
    void eventsOfACriPodInOrderAndItsProcessBeforeItsFirstInstruction() throws Exception {
        ContainerdRuntime runtime = runtime();
        runtime.connect();
        Events events = follow(runtime);
        CriClient.Sandbox pod = pod("gpu-events", "nvidia");
        events.await(pod.id(), Action.STARTED);
        String id = containerd.cri().createContainer(pod, "cuda", image,
                gpuSpec("/bin/sh", "-c", "echo ran > /tmp/first-instruction; sleep 60"));
        events.await(id, Action.CREATED);
        CompletableFuture<Void> start;
        try (ContainerdHarness.Hold hold = containerd.holdStart(id)) {
            start = CompletableFuture.runAsync(() -> containerd.cri().startContainer(id));
            events.await(id, Action.PROCESS_CREATED);
            // The task's process, as its shim wrote it (containerd's Tasks.Get waits while runc start is held).
            int pid = Integer.parseInt(Files.readString(containerd.stateDir().resolve("io.containerd.runtime.v2.task/k8s.io/"
                    + id + "/init.pid")).trim());
            Path root = Path.of("/proc", Integer.toString(pid), "root");
            assertThat(root.resolve("bin/busybox")).as("its own root, already pivoted into").isRegularFile();
            assertThat(root.resolve("tmp/first-instruction")).as("before its first instruction").doesNotExist();
            assertThat(Files.readString(Path.of("/proc", Integer.toString(pid), "cmdline"))).startsWith("runc");
            Thread.sleep(300);
            assertThat(events.of(id)).as("held at runc start").extracting(Event::action)
                    .containsExactly(Action.CREATED, Action.PROCESS_CREATED);
            hold.close();
            events.await(id, Action.STARTED);
            start.get(30, TimeUnit.SECONDS);
            ContainerInfo started = runtime.describe(id);
            assertThat(started.pid()).as("the process of /tasks/create").isEqualTo(pid);
            Instant processStart = new ProcessStartTime("/proc", Clock.systemUTC()).of(pid).orElseThrow();
            assertThat(Duration.between(processStart, started.startedAt().orElseThrow()).abs())
                    .as("its start is the process's, from its creation").isLessThan(Duration.ofMillis(50));
        }
        containerd.cri().stopContainer(id, 0);
        events.await(id, a -> a.runtimeAction().equals("/tasks/delete"));
        containerd.cri().removeContainer(id);
        events.await(id, Action.REMOVED);
        assertThat(events.of(id)).extracting(Event::action, Event::runtimeAction).containsExactly(
                org.assertj.core.groups.Tuple.tuple(Action.CREATED, "/containers/create"),
                org.assertj.core.groups.Tuple.tuple(Action.PROCESS_CREATED, "/tasks/create"),
                org.assertj.core.groups.Tuple.tuple(Action.STARTED, "/tasks/start"),
                org.assertj.core.groups.Tuple.tuple(Action.EXITED, "/tasks/exit"),
                org.assertj.core.groups.Tuple.tuple(Action.EXITED, "/tasks/delete"),
                org.assertj.core.groups.Tuple.tuple(Action.REMOVED, "/containers/delete"));
        assertThat(events.of(id)).allMatch(e -> e.time().isEmpty());
        assertThatThrownBy(() -> runtime.describe(id)).isInstanceOf(ContainerRuntimeException.NoSuchContainer.class);
    }

    @Test
    void eventsOfCtrCreateThenStartAndOfCtrRun() throws Exception {
        ContainerdRuntime runtime = runtime();
        runtime.connect();
        Events events = follow(runtime);
        String id = "ctr-" + UUID.randomUUID().toString().substring(0, 8);
        containerd.run("-n", ContainerdHarness.K8S, "containers", "create", image, id, "/bin/sleep", "60");
        cleanup.add(() -> remove(id));
        events.await(id, Action.CREATED);
        ContainerInfo created = runtime.describe(id);
        assertThat(created.running()).isFalse();
        assertThat(created.name()).isEqualTo(id);
        assertThat(created.overlay()).isPresent();
        assertThat(runtime.peekCreated(id)).as("nothing to peek at: describe never waits").isEmpty();
        containerd.run("-n", ContainerdHarness.K8S, "tasks", "start", "-d", "--null-io", id);
        events.await(id, Action.STARTED);
        assertThat(runtime.runningContainerIds()).contains(id);
        containerd.run("-n", ContainerdHarness.K8S, "tasks", "kill", "-s", "KILL", id);
        events.await(id, Action.EXITED);
        ContainerInfo exited = runtime.describe(id);
        assertThat(exited.running()).as("a stopped task").isFalse();
        assertThat(runtime.runningContainerIds()).doesNotContain(id);
        containerd.run("-n", ContainerdHarness.K8S, "tasks", "delete", id);
        containerd.run("-n", ContainerdHarness.K8S, "containers", "delete", id);
        events.await(id, Action.REMOVED);
        assertThat(events.of(id)).extracting(Event::runtimeAction).containsExactly("/containers/create", "/tasks/create",
                "/tasks/start", "/tasks/exit", "/tasks/delete", "/containers/delete");

        String run = "ctr-run-" + UUID.randomUUID().toString().substring(0, 8);
        containerd.ctrRun(ContainerdHarness.K8S, image, run, "/bin/sleep", "60");
        cleanup.add(() -> remove(run));
        events.await(run, Action.STARTED);
        assertThat(events.of(run)).extracting(Event::action).containsExactly(Action.CREATED, Action.PROCESS_CREATED,
                Action.STARTED);
    }

    @Test
    void anotherNamespaceIsNotSeen() throws Exception {
        String other = "daa-other";
        String otherImage = containerd.image(other, "plain", TestImages.DEBIAN_LIB, root -> { }, "/bin/sh");
        ContainerdRuntime runtime = runtime();
        runtime.connect();
        Events events = follow(runtime);
        String hidden = "hidden-" + UUID.randomUUID().toString().substring(0, 8);
        containerd.ctrRun(other, otherImage, hidden, "/bin/sleep", "60");
        // ctr makes the container's cgroups under /<namespace>: those go too, once the container has
        // (the cleanup runs last-added first).
        cleanup.add(() -> removeEmptyCgroups(other));
        cleanup.add(() -> remove(other, hidden));
        String seen = "seen-" + UUID.randomUUID().toString().substring(0, 8);
        containerd.ctrRun(ContainerdHarness.K8S, image, seen, "/bin/sleep", "60");
        cleanup.add(() -> remove(seen));
        events.await(seen, Action.STARTED);
        assertThat(events.all()).noneMatch(e -> e.containerId().equals(hidden));
        assertThat(runtime.runningContainerIds()).contains(seen).doesNotContain(hidden);
        assertThatThrownBy(() -> runtime.describe(hidden)).isInstanceOf(ContainerRuntimeException.NoSuchContainer.class);
        try (ContainerdRuntime otherRuntime = runtime(containerd.address(), other)) {
            assertThat(otherRuntime.runningContainerIds()).contains(hidden).doesNotContain(seen);
        }
    }

    @Test
    void dockersSocketIsNamedAsTheWrongApi() {
        DockerHarness docker = DockerHarness.get();
        try (ContainerdRuntime runtime = runtime(docker.host(), ContainerdHarness.K8S)) {
            assertThatThrownBy(runtime::connect).isInstanceOf(ContainerRuntimeException.WrongApi.class)
                    .hasMessageContaining(docker.host().substring("unix://".length()))
                    .hasMessageContaining("answers HTTP/1.1, not containerd's gRPC API")
                    .hasMessageContaining("Docker's socket");
            assertThat(runtime.ping()).isFalse();
        }
    }

    @Test
    void aMissingSocketIsUnreachable(@TempDir Path dir) {
        Path missing = dir.resolve("containerd.sock");
        try (ContainerdRuntime runtime = runtime("unix://" + missing, ContainerdHarness.K8S)) {
            assertThatThrownBy(runtime::connect).isInstanceOf(ContainerRuntimeException.Unreachable.class)
                    .hasMessageContaining(missing.toString()).hasMessageContaining("no such socket");
            assertThat(runtime.ping()).isFalse();
            assertThatThrownBy(runtime::runningContainerIds).isInstanceOf(ContainerRuntimeException.Unreachable.class);
            assertThatThrownBy(() -> runtime.events(Optional.empty())).isInstanceOf(ContainerRuntimeException.Unreachable.class);
            runtime.warmUp(); // quietly: only the first description's speed is at stake
        }
    }

    @Test
    void dockersNamespaceIsRefused() {
        assertThatThrownBy(() -> runtime(containerd.address(), "moby")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("Docker's own");
    }

    /**
     * A subscription made while containerd delivers other events (a node busy creating pods, as
     * the kubelet's retries right after containerd restarts): it is in place within moments, not
     * after its confirmation's 5 s, and the events delivered before its marker are kept.
     */
    @Test
    void aSubscriptionOpensWhileEventsFlow() throws Exception {
        ContainerdRuntime runtime = runtime();
        runtime.connect();
        AtomicBoolean publishing = new AtomicBoolean(true);
        AtomicInteger published = new AtomicInteger();
        Thread publisher = new Thread(() -> {
            try (ContainerdClient client = new ContainerdClient(containerd.socket(), ContainerdHarness.K8S)) {
                while (publishing.get()) {
                    String id = "busy-" + published.incrementAndGet();
                    client.callInNamespace(ContainerdRpc.PUBLISH, PublishRequest.newBuilder()
                            .setTopic(EventDecoder.CONTAINER_CREATE).setEvent(Any.newBuilder()
                                    .setTypeUrl("containerd.events.ContainerCreate").setValue(
                                            ContainerCreate.newBuilder().setId(id).build()
                                                    .toByteString())).build(), Duration.ofSeconds(5));
                    Thread.sleep(2);
                }
            } catch (ContainerRuntimeException | InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        publisher.start();
        try {
            while (published.get() < 20) {
                Thread.sleep(10);
            }
            for (int i = 0; i < 3; i++) {
                long began = System.nanoTime();
                try (ContainerRuntime.EventStream stream = runtime.events(Optional.empty())) {
                    assertThat(Duration.ofNanos(System.nanoTime() - began)).as("subscribed while events flow")
                            .isLessThan(Duration.ofSeconds(2));
                    assertThat(stream.next()).as("the events delivered meanwhile are kept")
                            .hasValueSatisfying(e -> assertThat(e.containerId()).startsWith("busy-"));
                }
            }
        } finally {
            publishing.set(false);
            publisher.join(5000);
        }
    }

    /**
     * A subscription lives as long as the agent: its request carries no deadline, which containerd
     * would end it at ("subscription error: context deadline exceeded" once the call deadline of
     * a unary call, 5 s, had passed).
     */
    @Test
    void aSubscriptionOutlivesTheCallDeadline() throws Exception {
        ContainerdRuntime runtime = runtime();
        runtime.connect();
        Events events = follow(runtime);
        Thread.sleep(ContainerdRuntime.CALL_DEADLINE.plusSeconds(1).toMillis());
        String late = "late-" + UUID.randomUUID().toString().substring(0, 8);
        containerd.ctrRun(ContainerdHarness.K8S, image, late, "/bin/sleep", "60");
        cleanup.add(() -> remove(late));
        events.await(late, Action.STARTED);
    }

    @Test
    void closingTheStreamFromAnotherThreadEndsAWaitingNext() throws Exception {
        ContainerdRuntime runtime = runtime();
        runtime.connect();
        ContainerRuntime.EventStream stream = runtime.events(Optional.empty());
        CompletableFuture<Optional<Event>> next = CompletableFuture.supplyAsync(() -> {
            try {
                return stream.next();
            } catch (ContainerRuntimeException e) {
                throw new IllegalStateException(e);
            }
        });
        Thread.sleep(200);
        assertThat(next).isNotDone();
        stream.close();
        assertThat(next.get(5, TimeUnit.SECONDS)).isEmpty();
    }

    @Test
    void containerdKilledMidStreamEndsItWithAnErrorAndANewSubscriptionWorksAfterItsRestart() throws Exception {
        ContainerdRuntime runtime = runtime();
        runtime.connect();
        String survivor = "survivor-" + UUID.randomUUID().toString().substring(0, 8);
        containerd.ctrRun(ContainerdHarness.K8S, image, survivor, "/bin/sleep", "120");
        cleanup.add(() -> remove(survivor));
        ContainerRuntime.EventStream stream = runtime.events(Optional.empty());
        CompletableFuture<Object> next = CompletableFuture.supplyAsync(() -> {
            try {
                return stream.next();
            } catch (ContainerRuntimeException e) {
                return e;
            }
        });
        containerd.kill();
        try {
            assertThat(next.get(10, TimeUnit.SECONDS)).isInstanceOf(ContainerRuntimeException.Unreachable.class);
            assertThat(runtime.ping()).isFalse();
        } finally {
            stream.close();
            containerd.start();
        }
        long answering = System.nanoTime();
        assertThat(runtime.connect()).startsWith("containerd");
        assertThat(Duration.ofNanos(System.nanoTime() - answering)).as("connected again at once, not after gRPC's backoff")
                .isLessThan(Duration.ofSeconds(2));
        assertThat(runtime.runningContainerIds()).as("its containers live on without it").contains(survivor);
        Events events = follow(runtime);
        String after = "after-" + UUID.randomUUID().toString().substring(0, 8);
        containerd.ctrRun(ContainerdHarness.K8S, image, after, "/bin/sleep", "60");
        cleanup.add(() -> remove(after));
        events.await(after, Action.STARTED);
    }

    // --- helpers

    private static void remove(String id) {
        remove(ContainerdHarness.K8S, id);
    }

    private static void remove(String namespace, String id) {
        containerd.remove(namespace, id);
    }

    /** {@code /sys/fs/cgroup/<controller>/<name>} (cgroup v1) or {@code /sys/fs/cgroup/<name>} (v2), where empty. */
    private static void removeEmptyCgroups(String name) throws IOException {
        List<Path> dirs = new ArrayList<>(List.of(Path.of("/sys/fs/cgroup", name)));
        try (Stream<Path> controllers = Files.list(Path.of("/sys/fs/cgroup"))) {
            controllers.map(c -> c.resolve(name)).forEach(dirs::add);
        }
        for (Path dir : dirs) {
            try {
                Files.deleteIfExists(dir);
            } catch (IOException e) {
                System.out.println("[containerd-runtime-it] cgroup " + dir + " stays: " + e);
            }
        }
    }

    private Events follow(ContainerdRuntime runtime) throws ContainerRuntimeException {
        Events events = new Events(runtime.events(Optional.empty()));
        cleanup.add(events);
        return events;
    }

    /** A subscription read on its own thread, every event kept for the assertions. */
    private static final class Events implements AutoCloseable {
        private final ContainerRuntime.EventStream stream;
        private final BlockingQueue<Event> arrived = new LinkedBlockingQueue<>();
        private final List<Event> seen = new ArrayList<>();
        private final Thread reader;

        Events(ContainerRuntime.EventStream stream) {
            this.stream = stream;
            this.reader = new Thread(() -> {
                try {
                    for (Optional<Event> e = stream.next(); e.isPresent(); e = stream.next()) {
                        arrived.add(e.get());
                    }
                } catch (ContainerRuntimeException e) {
                    // the stream broke: the test that breaks it looks at it itself
                }
            }, "test-events");
            reader.setDaemon(true);
            reader.start();
        }

        synchronized List<Event> all() {
            arrived.drainTo(seen);
            return List.copyOf(seen);
        }

        List<Event> of(String id) {
            return all().stream().filter(e -> e.containerId().equals(id)).toList();
        }

        void await(String id, Action action) throws InterruptedException {
            await(id, e -> e.action() == action);
        }

        void await(String id, Predicate<Event> what) throws InterruptedException {
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (System.nanoTime() < deadline) {
                if (of(id).stream().anyMatch(what)) {
                    return;
                }
                Thread.sleep(5);
            }
            throw new AssertionError("no such event for " + id + " within " + WAIT + "; seen: " + of(id));
        }

        @Override
        public void close() throws InterruptedException {
            stream.close();
            reader.join(5000);
        }
    }
}
