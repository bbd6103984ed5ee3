package io.driveralias.agent.containerd;

import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import io.driveralias.agent.containerd.api.Envelope;
import io.driveralias.agent.containerd.api.PublishRequest;
import io.driveralias.agent.containerd.api.SubscribeRequest;
import io.driveralias.agent.live.ContainerRuntime;
import io.driveralias.agent.live.ContainerRuntimeException;
import io.driveralias.agent.live.EventHandoff;
import io.grpc.ClientCall;
import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.Status;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * containerd's event stream ({@code Events.Subscribe}), filtered to one namespace and the
 * topics the agent follows. Read one message at a time (gRPC's manual flow control), so at most
 * one event waits here whatever containerd sends, besides those that came before the subscription
 * was confirmed (a few, during at most the confirmation's 5 s). {@link #close()} from any thread
 * cancels the call's context, which ends a waiting {@link #next()}.
 *
 * <p>containerd sends nothing, not even headers, until the first event, so a call in progress
 * does not tell whether the subscription is in place yet. {@link #open} publishes a marker of
 * its own on a topic of the agent's ({@code /driver-alias/subscribed}, with a random nonce) and
 * returns once the marker comes back through the stream (publishing it again until it does):
 * from then on no event is missed,
 * which the reconcile that follows every (re)connect relies on.
 */
final class EventSubscription implements ContainerRuntime.EventStream {

    static final String MARKER_TOPIC = "/driver-alias/subscribed";
    static final String MARKER_TYPE = "driver-alias.Subscribed";
    private static final Duration CONFIRMATION = Duration.ofSeconds(5);
    private static final Duration REPUBLISH = Duration.ofMillis(50);

    private final String namespace;
    /** Unbounded: containerd sends one message at a time, asked for as the last is read. */
    private final EventHandoff<Status> queue = EventHandoff.unbounded();
    private final CountDownLatch confirmed = new CountDownLatch(1);
    private final Context.CancellableContext context = Context.current().withCancellation();
    private final ByteString nonce = ByteString.copyFrom(UUID.randomUUID().toString(), StandardCharsets.US_ASCII);
    private final ContainerdClient client;
    private ClientCall<SubscribeRequest, Envelope> call;
    private volatile boolean closed;
    private volatile boolean markerSeen;
    /**
     * Events delivered before the marker, each asked for again on arrival: until the marker comes
     * nobody reads, and with one message asked for at a time the marker would wait behind the
     * first event of a busy node for good. {@link #next} asks for none in their stead.
     */
    private final AtomicInteger askedAhead = new AtomicInteger();
    private volatile Status closeStatus;

    private EventSubscription(ContainerdClient client, String namespace) {
        this.client = client;
        this.namespace = namespace;
    }

    /** Subscribes, and returns once containerd delivers to the subscription. */
    static EventSubscription open(ContainerdClient client, String namespace) throws ContainerRuntimeException {
        EventSubscription subscription = new EventSubscription(client, namespace);
        try {
            subscription.start();
            subscription.confirm();
            return subscription;
        } catch (ContainerRuntimeException | RuntimeException e) {
            subscription.close();
            throw e;
        }
    }

    /** The filters: this namespace, and the followed topics and the marker's, in containerd's filter syntax. */
    static List<String> filters(String namespace) {
        List<String> filters = new ArrayList<>();
        for (String topic : EventDecoder.TOPICS) {
            filters.add("namespace==\"" + namespace + "\",topic==\"" + topic + "\"");
        }
        filters.add("namespace==\"" + namespace + "\",topic==\"" + MARKER_TOPIC + "\"");
        return filters;
    }

    private void start() {
        context.run(() -> call = client.newStreamInNamespace(ContainerdRpc.SUBSCRIBE));
        call.start(new Listener(), new Metadata());
        call.request(1);
        call.sendMessage(SubscribeRequest.newBuilder().addAllFilters(filters(namespace)).build());
        call.halfClose();
    }

    /**
     * Publishes the marker until it comes back: one published before containerd registered the
     * subscription is lost, so it is sent again every {@link #REPUBLISH}.
     */
    private void confirm() throws ContainerRuntimeException {
        long deadline = System.nanoTime() + CONFIRMATION.toNanos();
        PublishRequest marker = PublishRequest.newBuilder().setTopic(MARKER_TOPIC)
                .setEvent(Any.newBuilder().setTypeUrl(MARKER_TYPE).setValue(nonce)).build();
        try {
            while (!markerSeen && closeStatus == null && System.nanoTime() < deadline) {
                client.callInNamespace(ContainerdRpc.PUBLISH, marker, CONFIRMATION);
                confirmed.await(REPUBLISH.toMillis(), TimeUnit.MILLISECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ContainerRuntimeException.Unreachable("interrupted while subscribing", e);
        }
        if (!markerSeen) {
            Status status = closeStatus;
            if (status != null) {
                throw client.failure("Subscribe", status);
            }
            throw new ContainerRuntimeException.Unreachable("containerd did not deliver to the event subscription within "
                    + CONFIRMATION.toSeconds() + " s", null);
        }
    }

    @Override
    public Optional<ContainerRuntime.Event> next() throws ContainerRuntimeException {
        Optional<ContainerRuntime.Event> event = queue.next(this::failIfBroken);
        if (event.isPresent() && askedAhead.getAndUpdate(n -> Math.max(0, n - 1)) == 0) {
            call.request(1);
        }
        return event;
    }

    /** The call's end: a failure unless it was closed here or ended well. */
    private void failIfBroken(Status status) throws ContainerRuntimeException {
        if (!closed && !status.isOk()) {
            throw client.failure("event stream", status);
        }
    }

    @Override
    public void close() {
        closed = true;
        context.cancel(null);
    }

    /** On gRPC's event-loop thread: never blocks. */
    private final class Listener extends ClientCall.Listener<Envelope> {
        @Override
        public void onMessage(Envelope envelope) {
            if (envelope.getTopic().equals(MARKER_TOPIC)) {
                if (envelope.getEvent().getValue().equals(nonce)) {
                    markerSeen = true;
                    confirmed.countDown();
                }
                call.request(1);
                return;
            }
            Optional<ContainerRuntime.Event> event = EventDecoder.decode(envelope, namespace);
            if (event.isPresent()) {
                queue.add(event.get());
                if (!markerSeen) {
                    askedAhead.incrementAndGet();
                    call.request(1);
                }
            } else {
                call.request(1);
            }
        }

        @Override
        public void onClose(Status status, Metadata trailers) {
            closeStatus = status;
            queue.addEnd(status);
            confirmed.countDown();
        }
    }
}
