package io.driveralias.agent.containerd;

import static io.driveralias.agent.containerd.Fixtures.CRI_CONTAINER;
import static io.driveralias.agent.containerd.Fixtures.CRI_SANDBOX;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import io.driveralias.agent.containerd.api.ContainerCreate;
import io.driveralias.agent.containerd.api.Envelope;
import io.driveralias.agent.containerd.api.TaskExit;
import io.driveralias.agent.live.ContainerRuntime.Action;
import io.driveralias.agent.live.ContainerRuntime.Event;
import io.driveralias.agent.testing.SeededCases;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

class EventDecoderTest {

    private static List<Event> decodeAll(List<Envelope> envelopes, String namespace) {
        List<Event> events = new ArrayList<>();
        for (Envelope envelope : envelopes) {
            EventDecoder.decode(envelope, namespace).ifPresent(events::add);
        }
        return events;
    }

    @Test
    void aRecordedCriPodAndCtrRunGiveEachActionInOrder() {
        assertThat(decodeAll(Fixtures.events(), "k8s.io")).containsExactly(
                new Event(CRI_SANDBOX, Action.CREATED, "/containers/create", ""),
                new Event(CRI_SANDBOX, Action.PROCESS_CREATED, "/tasks/create", "", 18814),
                new Event(CRI_SANDBOX, Action.STARTED, "/tasks/start", "", 18814),
                new Event(CRI_CONTAINER, Action.CREATED, "/containers/create", ""),
                new Event(CRI_CONTAINER, Action.PROCESS_CREATED, "/tasks/create", "", 18845),
                new Event(CRI_CONTAINER, Action.STARTED, "/tasks/start", "", 18845),
                new Event(CRI_CONTAINER, Action.EXITED, "/tasks/exit", ""),
                new Event(CRI_CONTAINER, Action.EXITED, "/tasks/delete", ""),
                new Event(CRI_CONTAINER, Action.REMOVED, "/containers/delete", ""),
                new Event(CRI_SANDBOX, Action.EXITED, "/tasks/exit", ""),
                new Event(CRI_SANDBOX, Action.EXITED, "/tasks/delete", ""),
                new Event(CRI_SANDBOX, Action.REMOVED, "/containers/delete", ""),
                new Event("ctr-one", Action.CREATED, "/containers/create", ""),
                new Event("ctr-one", Action.PROCESS_CREATED, "/tasks/create", "", 18946),
                new Event("ctr-one", Action.STARTED, "/tasks/start", "", 18946),
                // the exec "probe" exited in between: not the container's own process
                new Event("ctr-one", Action.EXITED, "/tasks/exit", ""),
                new Event("ctr-one", Action.EXITED, "/tasks/delete", ""),
                new Event("ctr-one", Action.REMOVED, "/containers/delete", ""));
    }

    @Test
    void anotherNamespacesEventsAreNotThisOnes() {
        assertThat(decodeAll(Fixtures.events(), "other")).isEmpty();
        assertThat(decodeAll(Fixtures.events(), "moby")).isEmpty();
    }

    @Test
    void anExecsExitIsNotTheContainers() {
        Envelope exit = envelope("/tasks/exit", TaskExit.newBuilder().setContainerId("c1").setId("exec-1").setPid(42).build()
                .toByteString());
        assertThat(EventDecoder.decode(exit, "k8s.io")).isEmpty();
        Envelope init = envelope("/tasks/exit", TaskExit.newBuilder().setContainerId("c1").setId("c1").build().toByteString());
        assertThat(EventDecoder.decode(init, "k8s.io")).contains(new Event("c1", Action.EXITED, "/tasks/exit", ""));
    }

    @Test
    void malformedPayloadsAndIdsAreSkipped() {
        assertThat(EventDecoder.decode(envelope("/containers/create", ByteString.copyFromUtf8("\u00ff\u00ff\u00ff")), "k8s.io"))
                .isEmpty();
        for (String id : List.of("", "../../etc", "a b", "x".repeat(77), "-lead", "trail-", "a..b", "a\nb")) {
            assertThat(EventDecoder.decode(envelope("/containers/create", ContainerCreate.newBuilder().setId(id).build()
                    .toByteString()), "k8s.io")).as(id).isEmpty();
        }
        assertThat(EventDecoder.decode(envelope("/containers/create", ContainerCreate.newBuilder().setId("x".repeat(76)).build()
                .toByteString()), "k8s.io")).isPresent();
    }

    @Test
    void topicsNotFollowedAndTheMarkerAreNotEvents() {
        for (String topic : List.of("/snapshot/prepare", "/tasks/exec-added", "/tasks/oom", "/images/create", "",
                EventSubscription.MARKER_TOPIC)) {
            assertThat(EventDecoder.decode(envelope(topic, ContainerCreate.newBuilder().setId("c1").build().toByteString()),
                    "k8s.io")).as(topic).isEmpty();
        }
    }

    @Test
    void theFiltersNameTheNamespaceAndEachTopicQuoted() {
        assertThat(EventSubscription.filters("k8s.io")).containsExactly(
                "namespace==\"k8s.io\",topic==\"/containers/create\"",
                "namespace==\"k8s.io\",topic==\"/tasks/create\"",
                "namespace==\"k8s.io\",topic==\"/tasks/start\"",
                "namespace==\"k8s.io\",topic==\"/tasks/exit\"",
                "namespace==\"k8s.io\",topic==\"/tasks/delete\"",
                "namespace==\"k8s.io\",topic==\"/containers/delete\"",
                "namespace==\"k8s.io\",topic==\"/driver-alias/subscribed\"");
    }

    static java.util.stream.Stream<Long> seeds() {
        return SeededCases.seeds(300);
    }

    /** Any bytes as any followed topic's payload: an event or nothing, never an exception. */
    @ParameterizedTest
    @MethodSource("seeds")
    void mutatedRecordedPayloadsNeverThrow(long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        List<Envelope> recorded = Fixtures.events();
        Envelope original = recorded.get(random.nextInt(recorded.size()));
        byte[] payload = original.getEvent().getValue().toByteArray();
        int flips = 1 + random.nextInt(8);
        for (int i = 0; i < flips && payload.length > 0; i++) {
            payload[random.nextInt(payload.length)] = (byte) random.nextInt(256);
        }
        String topic = SeededCases.oneOf(random, EventDecoder.TOPICS);
        Optional<Event> event = EventDecoder.decode(envelope(topic, ByteString.copyFrom(payload)), "k8s.io");
        event.ifPresent(e -> assertThat(EventDecoder.isContainerId(e.containerId())).isTrue());
    }

    private static Envelope envelope(String topic, ByteString payload) {
        return Envelope.newBuilder().setNamespace("k8s.io").setTopic(topic)
                .setEvent(Any.newBuilder().setTypeUrl("containerd.events.X").setValue(payload)).build();
    }
}
