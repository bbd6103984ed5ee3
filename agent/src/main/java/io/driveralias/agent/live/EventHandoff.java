package io.driveralias.agent.live;

import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * The hand-over from the threads that receive a runtime's events to the one that reads them
 * through {@link ContainerRuntime.EventStream#next}: the events in order, then one end, after
 * which the reader gets nothing more. An interrupted reader ends it too. What an end means, a
 * stream that is over or a failure to throw, is the source's to say ({@link Ending}). Docker's
 * merged stream and containerd's subscription both hand over this way; here once, so that both
 * end alike.
 *
 * @param <E> what a source ends with
 */
public final class EventHandoff<E> {

    /** What the end a source gave means to the reader: nothing more to read, or a failure to throw. */
    @FunctionalInterface
    public interface Ending<E> {
        void check(E end) throws ContainerRuntimeException;
    }

    private record End<E>(E why) {
    }

    private final BlockingQueue<Object> queue;
    /** The reader's own: no item is taken once the end was. */
    private boolean ended;

    private EventHandoff(BlockingQueue<Object> queue) {
        this.queue = queue;
    }

    /** At most {@code capacity} events wait; then {@link #put} waits for the reader. */
    public static <E> EventHandoff<E> bounded(int capacity) {
        return new EventHandoff<>(new ArrayBlockingQueue<>(capacity));
    }

    /** Never waits: for a source that bounds what it sends itself (flow control). */
    public static <E> EventHandoff<E> unbounded() {
        return new EventHandoff<>(new LinkedBlockingQueue<>());
    }

    /** Hands an event over, waiting for room. */
    public void put(ContainerRuntime.Event event) throws InterruptedException {
        queue.put(event);
    }

    /** Hands an event over without waiting: an unbounded hand-over's. */
    public void add(ContainerRuntime.Event event) {
        queue.add(event);
    }

    /** Hands over the end, after the events before it, waiting for room. */
    public void putEnd(E why) throws InterruptedException {
        queue.put(new End<>(why));
    }

    /** Hands over the end without waiting: an unbounded hand-over's. */
    public void addEnd(E why) {
        queue.add(new End<>(why));
    }

    /** The next event, waiting for it; empty once ended, {@code ending} told what the end means. */
    public Optional<ContainerRuntime.Event> next(Ending<E> ending) throws ContainerRuntimeException {
        if (ended) {
            return Optional.empty();
        }
        Object item;
        try {
            item = queue.take();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            ended = true;
            return Optional.empty();
        }
        if (item instanceof ContainerRuntime.Event event) {
            return Optional.of(event);
        }
        ended = true;
        @SuppressWarnings("unchecked")
        End<E> end = (End<E>) item;
        ending.check(end.why());
        return Optional.empty();
    }
}
