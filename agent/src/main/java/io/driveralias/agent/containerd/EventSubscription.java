package io.driveralias.agent.containerd;

import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import io.driveralias.agent.containerd.api.Envelope;
import io.driveralias.agent.containerd.api.PublishRequest;
import io.driveralias.agent.containerd.api.SubscribeRequest;
import io.driveralias.agent.grpc.GrpcException;
import io.driveralias.agent.grpc.ServerStream;
import io.driveralias.agent.live.ContainerRuntime;
import io.driveralias.agent.live.ContainerRuntimeException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * containerd's event stream ({@code Events.Subscribe}), filtered to one namespace and the
 * topics the agent follows. Its messages are read and decoded on the thread that asks for the
 * next event; the client holds at most what the stream's flow control lets containerd send ahead
 * ({@link io.driveralias.agent.grpc.ServerStream}). {@link #close()} from any thread cancels the
 * call, which ends a waiting {@link #next()}.
 *
 * <p>containerd sends nothing, not even headers, until the first event, so a call in progress
 * does not tell whether the subscription is in place yet. {@link #open} publishes a marker of
 * its own on a topic of the agent's ({@code /driver-alias/subscribed}, with a random nonce) and
 * returns once the marker comes back through the stream (publishing it again until it does):
 * from then on no event is missed, which the reconcile that follows every (re)connect relies on.
 * Events that come before the marker (a busy node) are kept for {@link #next()}.
 */
final class EventSubscription implements ContainerRuntime.EventStream {

    static final String MARKER_TOPIC = "/driver-alias/subscribed";
    static final String MARKER_TYPE = "driver-alias.Subscribed";
    private static final Duration CONFIRMATION = Duration.ofSeconds(5);
    private static final Duration REPUBLISH = Duration.ofMillis(50);

    private final String namespace;
    private final ByteString nonce = ByteString.copyFrom(UUID.randomUUID().toString(), StandardCharsets.US_ASCII);
    private final ContainerdClient client;
    private final ServerStream<Envelope> stream;
    /** Events that came before the marker: a few, during at most the confirmation's 5 s. */
    private final ArrayDeque<ContainerRuntime.Event> early = new ArrayDeque<>();
    private volatile boolean closed;
    private boolean ended;

    private EventSubscription(ContainerdClient client, String namespace, ServerStream<Envelope> stream) {
        this.client = client;
        this.namespace = namespace;
        this.stream = stream;
    }

    /** Subscribes, and returns once containerd delivers to the subscription. */
    static EventSubscription open(ContainerdClient client, String namespace) throws ContainerRuntimeException {
        ServerStream<Envelope> stream = client.streamInNamespace(ContainerdRpc.SUBSCRIBE,
                SubscribeRequest.newBuilder().addAllFilters(filters(namespace)).build(), CONFIRMATION);
        EventSubscription subscription = new EventSubscription(client, namespace, stream);
        try {
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

    /**
     * Publishes the marker until it comes back: one published before containerd registered the
     * subscription is lost, so it is sent again every {@link #REPUBLISH} without it.
     */
    private void confirm() throws ContainerRuntimeException {
        long deadline = System.nanoTime() + CONFIRMATION.toNanos();
        PublishRequest marker = PublishRequest.newBuilder().setTopic(MARKER_TOPIC)
                .setEvent(Any.newBuilder().setTypeUrl(MARKER_TYPE).setValue(nonce)).build();
        try {
            while (System.nanoTime() < deadline) {
                client.callInNamespace(ContainerdRpc.PUBLISH, marker, CONFIRMATION);
                long until = Math.min(deadline, System.nanoTime() + REPUBLISH.toNanos());
                for (Envelope envelope = stream.next(until - System.nanoTime()); envelope != null;
                        envelope = stream.next(until - System.nanoTime())) {
                    if (isMarker(envelope)) {
                        if (envelope.getEvent().getValue().equals(nonce)) {
                            return;
                        }
                    } else {
                        EventDecoder.decode(envelope, namespace).ifPresent(early::add);
                    }
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ContainerRuntimeException.Unreachable("interrupted while subscribing", e);
        } catch (GrpcException e) {
            throw client.failure("Subscribe", e);
        }
        throw new ContainerRuntimeException.Unreachable("containerd did not deliver to the event subscription within "
                + CONFIRMATION.toSeconds() + " s", null);
    }

    private static boolean isMarker(Envelope envelope) {
        return envelope.getTopic().equals(MARKER_TOPIC);
    }

    @Override
    public Optional<ContainerRuntime.Event> next() throws ContainerRuntimeException {
        if (!early.isEmpty()) {
            return Optional.of(early.poll());
        }
        while (!ended) {
            Envelope envelope;
            try {
                envelope = stream.next(TimeUnit.DAYS.toNanos(365));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                ended = true;
                return Optional.empty();
            } catch (GrpcException e) {
                ended = true;
                if (closed || e.code() == GrpcException.Code.OK) {
                    return Optional.empty();
                }
                throw client.failure("event stream", e);
            }
            if (envelope != null && !isMarker(envelope)) {
                Optional<ContainerRuntime.Event> event = EventDecoder.decode(envelope, namespace);
                if (event.isPresent()) {
                    return event;
                }
            }
        }
        return Optional.empty();
    }

    @Override
    public void close() {
        closed = true;
        stream.close();
    }
}
