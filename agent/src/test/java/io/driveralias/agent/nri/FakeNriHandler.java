package io.driveralias.agent.nri;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The NRI port's fake: records what the plugin hands it, in order, as events; a test sets what
 * StartContainer does ({@link #onStart}) and waits for events with {@link #await}.
 */
public final class FakeNriHandler implements NriHandler {

    /** One call of the port. */
    public sealed interface Event permits Connected, Disconnected, Synchronized, Created, Started, AnsweredAtOnce,
            NotServed {
    }

    public record Connected(NriRuntimeInfo runtime) implements Event {
    }

    public record Disconnected(String why) implements Event {
    }

    public record Synchronized(NriSync part) implements Event {
    }

    public record Created(NriPod pod, NriContainer container) implements Event {
    }

    /**
     * A StartContainer handled: what came, when its request's first byte was read, when the handler
     * was entered, the call's deadline, when the handler returned, and whether the answer went before
     * it did.
     */
    public record Started(NriPod pod, NriContainer container, long receivedNanos, long enteredNanos, long deadlineNanos,
                          long returnedNanos, boolean answeredFirst) implements Event {
    }

    public record NotServed(NriPod pod, NriContainer container, String why) implements Event {
    }

    /** A start the handler did not want, once answered. */
    public record AnsweredAtOnce(NriPod pod, NriContainer container) implements Event {
    }

    /** What the handler does after a start it did not want was answered. */
    public interface AfterAnswer {
        void handle(NriContainer container) throws InterruptedException;
    }

    /** What a StartContainer handler does, given the call. */
    public interface StartBehaviour {
        void handle(NriPod pod, NriContainer container, StartCall call) throws InterruptedException;
    }

    private final BlockingQueue<Event> events = new LinkedBlockingQueue<>();
    /** CreateContainer calls, kept apart: tests of the other calls neither await nor drain them. */
    private final BlockingQueue<Event> creates = new LinkedBlockingQueue<>();
    private volatile StartBehaviour onStart = (pod, container, call) -> { };
    private volatile java.util.function.Consumer<NriContainer> onCreate = container -> { };
    private volatile java.util.function.Predicate<NriContainer> wantsStart = container -> true;
    private volatile AfterAnswer onAnsweredAtOnce = container -> { };
    private volatile java.util.function.Consumer<NriRuntimeInfo> onConnected = runtime -> { };
    private volatile java.util.function.Consumer<NriSync> onSynchronize = part -> { };

    /** What {@code connected} does first (on the reading thread): a test makes it throw. */
    public FakeNriHandler onConnected(java.util.function.Consumer<NriRuntimeInfo> behaviour) {
        this.onConnected = behaviour;
        return this;
    }

    /** What {@code synchronize} does first (on the reading thread). */
    public FakeNriHandler onSynchronize(java.util.function.Consumer<NriSync> behaviour) {
        this.onSynchronize = behaviour;
        return this;
    }

    /** What CreateContainer does (on the plugin's reading thread, while the runtime waits). */
    public FakeNriHandler onCreate(java.util.function.Consumer<NriContainer> behaviour) {
        this.onCreate = behaviour;
        return this;
    }

    /** Which starts the handler wants (the others are answered from the reading thread, unseen here). */
    public FakeNriHandler wantsStart(java.util.function.Predicate<NriContainer> which) {
        this.wantsStart = which;
        return this;
    }

    @Override
    public boolean wantsStart(NriPod pod, NriContainer container) {
        return wantsStart.test(container);
    }

    public FakeNriHandler onAnsweredAtOnce(AfterAnswer behaviour) {
        this.onAnsweredAtOnce = behaviour;
        return this;
    }

    @Override
    public void answeredAtOnce(NriPod pod, NriContainer container) {
        try {
            onAnsweredAtOnce.handle(container);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        events.add(new AnsweredAtOnce(pod, container));
    }

    public FakeNriHandler onStart(StartBehaviour behaviour) {
        this.onStart = behaviour;
        return this;
    }

    @Override
    public void connected(NriRuntimeInfo runtime) {
        onConnected.accept(runtime);
        events.add(new Connected(runtime));
    }

    @Override
    public void disconnected(String why) {
        events.add(new Disconnected(why));
    }

    @Override
    public void synchronize(NriSync part) {
        onSynchronize.accept(part);
        events.add(new Synchronized(part));
    }

    @Override
    public void createContainer(NriPod pod, NriContainer container) {
        onCreate.accept(container);
        creates.add(new Created(pod, container));
    }

    @Override
    public void startContainer(NriPod pod, NriContainer container, StartCall call) {
        long entered = System.nanoTime();
        try {
            onStart.handle(pod, container, call);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        events.add(new Started(pod, container, call.receivedNanos(), entered, call.deadlineNanos(), System.nanoTime(),
                call.answered()));
    }

    @Override
    public void notServed(NriPod pod, NriContainer container, String why) {
        events.add(new NotServed(pod, container, why));
    }

    /** The next event, which must be of {@code type}, within {@code timeout} (CreateContainer calls: the next of those). */
    public <T extends Event> T await(Class<T> type, Duration timeout) {
        try {
            Event e = (type == Created.class ? creates : events).poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
            assertThat(e).as("an event of type " + type.getSimpleName() + " within " + timeout).isNotNull();
            assertThat(e).isInstanceOf(type);
            return type.cast(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** Events that came and were not awaited (and none more within {@code quiet}). */
    public List<Event> drain(Duration quiet) throws InterruptedException {
        List<Event> rest = new ArrayList<>();
        Event e;
        while ((e = events.poll(quiet.toMillis(), TimeUnit.MILLISECONDS)) != null) {
            rest.add(e);
        }
        return rest;
    }
}
