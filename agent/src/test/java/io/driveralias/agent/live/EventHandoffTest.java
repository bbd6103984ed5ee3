package io.driveralias.agent.live;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class EventHandoffTest {

    private static final ContainerRuntime.Event CREATED = new ContainerRuntime.Event("a", ContainerRuntime.Action.CREATED,
            "create", "1");
    private static final ContainerRuntime.Event STARTED = new ContainerRuntime.Event("a", ContainerRuntime.Action.STARTED,
            "start", "2");

    @Test
    void theEventsInOrderThenTheEndOnceThenNothing() throws Exception {
        EventHandoff<String> handoff = EventHandoff.unbounded();
        handoff.add(CREATED);
        handoff.add(STARTED);
        handoff.addEnd("over");
        handoff.add(CREATED);
        List<String> ends = new ArrayList<>();

        assertThat(handoff.next(ends::add)).contains(CREATED);
        assertThat(handoff.next(ends::add)).contains(STARTED);
        assertThat(handoff.next(ends::add)).isEmpty();
        assertThat(handoff.next(ends::add)).as("nothing after the end").isEmpty();
        assertThat(ends).containsExactly("over");
    }

    @Test
    void anEndThatMeansAFailureIsThrownOnceAfterTheEventsBeforeIt() throws Exception {
        EventHandoff<String> handoff = EventHandoff.bounded(2);
        handoff.put(CREATED);
        handoff.putEnd("broken");
        EventHandoff.Ending<String> failing = why -> {
            throw new ContainerRuntimeException(why);
        };

        assertThat(handoff.next(failing)).contains(CREATED);
        assertThatThrownBy(() -> handoff.next(failing)).isInstanceOf(ContainerRuntimeException.class).hasMessage("broken");
        assertThat(handoff.next(failing)).isEmpty();
    }

    @Test
    @Timeout(value = 10, unit = TimeUnit.SECONDS)
    void anInterruptedReaderEndsItKeepingItsInterrupt() throws Exception {
        EventHandoff<String> handoff = EventHandoff.unbounded();
        Optional<?>[] read = new Optional<?>[2];
        boolean[] interrupted = new boolean[1];
        Thread reader = new Thread(() -> {
            try {
                read[0] = handoff.next(why -> { });
                interrupted[0] = Thread.currentThread().isInterrupted();
                handoff.add(CREATED);
                read[1] = handoff.next(why -> { });
            } catch (ContainerRuntimeException e) {
                throw new AssertionError(e);
            }
        });
        reader.start();
        reader.interrupt();
        reader.join();

        assertThat(read[0]).isEmpty();
        assertThat(interrupted[0]).isTrue();
        assertThat(read[1]).as("ended: an event after the interrupt is not read").isEmpty();
    }
}
