package io.driveralias.agent.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.driveralias.agent.live.ContainerRuntime;
import io.driveralias.agent.live.ContainerRuntimeException;
import java.util.Optional;
import java.util.concurrent.LinkedBlockingQueue;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Docker's events with its containerd's process creations merged in: Docker's stream decides the merged one's life. */
@Timeout(30)
class MergedEventsTest {

    private static final Object END = new Object();

    /** Docker's stream: events given, then its end or a failure. */
    private static final class DockerStream implements ContainerRuntime.EventStream {
        final LinkedBlockingQueue<Object> items = new LinkedBlockingQueue<>();
        volatile boolean closed;

        void event(String id, ContainerRuntime.Action action, String dockerAction) {
            items.add(new ContainerRuntime.Event(id, action, dockerAction, "1700000000.000000001"));
        }

        @Override
        public Optional<ContainerRuntime.Event> next() throws ContainerRuntimeException {
            Object item;
            try {
                item = items.take();
            } catch (InterruptedException e) {
                return Optional.empty();
            }
            if (item == END) {
                return Optional.empty();
            }
            if (item instanceof ContainerRuntimeException e) {
                throw e;
            }
            return Optional.of((ContainerRuntime.Event) item);
        }

        @Override
        public void close() {
            closed = true;
            items.add(END);
        }
    }

    private static void await(java.util.function.BooleanSupplier condition) throws InterruptedException {
        while (!condition.getAsBoolean()) {
            Thread.sleep(5);
        }
    }

    @Test
    void bothSourcesAreReadAndDockersEndIsTheEnd() throws Exception {
        DockerStream docker = new DockerStream();
        FakeDockerContainerd containerd = new FakeDockerContainerd("unix:///run/containerd/containerd.sock", "moby");
        try (MergedEvents merged = MergedEvents.start(docker, containerd::processCreations, containerd.address())) {
            docker.event("a", ContainerRuntime.Action.CREATED, "create");
            assertThat(merged.next()).get().extracting(ContainerRuntime.Event::runtimeAction).isEqualTo("create");
            await(() -> containerd.subscriptions() == 1);
            containerd.injectProcess("a", 4242);
            assertThat(merged.next()).get().satisfies(e -> {
                assertThat(e.action()).isEqualTo(ContainerRuntime.Action.PROCESS_CREATED);
                assertThat(e.pid()).isEqualTo(4242);
                assertThat(e.time()).as("no position to resume Docker's stream from").isEmpty();
            });
            docker.event("a", ContainerRuntime.Action.STARTED, "start");
            assertThat(merged.next()).get().extracting(ContainerRuntime.Event::runtimeAction).isEqualTo("start");

            docker.items.add(END);
            assertThat(merged.next()).isEmpty();
            assertThat(merged.next()).isEmpty();
        }
        assertThat(docker.closed).isTrue();
    }

    @Test
    void aFailureOfDockersStreamIsThisOnes() throws Exception {
        DockerStream docker = new DockerStream();
        FakeDockerContainerd containerd = new FakeDockerContainerd("unix:///c.sock", "moby");
        try (MergedEvents merged = MergedEvents.start(docker, containerd::processCreations, containerd.address())) {
            docker.items.add(new ContainerRuntimeException.Unreachable("Docker went away", null));
            assertThatThrownBy(merged::next).hasMessageContaining("Docker went away");
        }
    }

    @Test
    void containerdLostIsSubscribedToAgainWhileDockersEventsGoOn() throws Exception {
        DockerStream docker = new DockerStream();
        FakeDockerContainerd containerd = new FakeDockerContainerd("unix:///c.sock", "moby");
        containerd.injectSubscribeFailures(1);
        try (MergedEvents merged = MergedEvents.start(docker, containerd::processCreations, containerd.address())) {
            docker.event("a", ContainerRuntime.Action.CREATED, "create");
            assertThat(merged.next()).isPresent();
            await(() -> containerd.subscriptions() == 1);
            containerd.injectBreak();
            docker.event("b", ContainerRuntime.Action.CREATED, "create");
            assertThat(merged.next()).get().extracting(ContainerRuntime.Event::containerId).isEqualTo("b");
            await(() -> containerd.subscriptions() == 1);
            containerd.injectProcess("b", 77);
            assertThat(merged.next()).get().extracting(ContainerRuntime.Event::pid).isEqualTo(77);
        }
    }
}
