package io.driveralias.agent.nri;

import com.google.protobuf.MessageLite;
import io.driveralias.agent.nri.FakeNriRuntime.Peer;
import io.driveralias.agent.nri.FakeNriRuntime.Reply;
import io.driveralias.agent.testing.nri.ConfigureRequest;
import io.driveralias.agent.testing.nri.ConfigureResponse;
import io.driveralias.agent.testing.nri.Container;
import io.driveralias.agent.testing.nri.CreateContainerRequest;
import io.driveralias.agent.testing.nri.PodSandbox;
import io.driveralias.agent.testing.nri.PodSandboxRequest;
import io.driveralias.agent.testing.nri.RegisterPluginRequest;
import io.driveralias.agent.testing.nri.StartContainerRequest;
import io.driveralias.agent.testing.nri.StateChangeEvent;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Pattern;

/**
 * A runtime's NRI side driving an external plugin as containerd/nri's {@code pkg/adaptation} does,
 * call for call, in the two forms runtimes speak today: {@link Api#STATE_CHANGE} (NRI 0.6 to 0.11:
 * containerd 1.7 to 2.2, CRI-O to 1.34) and {@link Api#DEDICATED} (NRI 0.12: containerd 2.3). Its
 * rules, as {@code plugin.go} and {@code plugin_type.go} at NRI's head state them:
 * <ul>
 * <li>the plugin must register within the registration timeout, with a valid name
 *     ({@code [a-zA-Z0-9_.+-]}) and a two-digit index; then Configure, under the request timeout;
 *     its event mask must hold no unknown bit (none at all: every event);
 * <li>an event the plugin did not subscribe to is never relayed;
 * <li>on {@link Api#DEDICATED}, each event goes to its own method; for the events that once went
 *     through StateChange (pod run, stop and removal, post-create, start, post-start, post-update,
 *     container removal) an answer of ttrpc status 12 (Unimplemented) makes the runtime retry as
 *     {@code StateChange}, and every later such event goes there directly, with one deprecation
 *     warning per event; CreateContainer, UpdateContainer, StopContainer and UpdatePodSandbox have
 *     no fallback;
 * <li>on {@link Api#STATE_CHANGE}, those same events go through StateChange only;
 * <li>every call runs under the request timeout; a timeout or a closed connection drops the plugin
 *     (the runtime closes it and the container goes on); any other error fails the container.
 * </ul>
 * A unit of the protocol, not of the repair: the plugin under test is the real one, on a real socket.
 */
final class AdaptationRuntime {

    /** How the runtime calls the events that StateChange carried before NRI 0.12. */
    enum Api {
        /** NRI 0.6 to 0.11: StateChange{event}. */
        STATE_CHANGE,
        /** NRI 0.12: the dedicated method, StateChange only after an Unimplemented answer. */
        DEDICATED
    }

    /** NRI's Event enum, the dedicated method of each, and whether it may fall back to StateChange. */
    enum Event {
        RUN_POD_SANDBOX(1, "RunPodSandbox", true), STOP_POD_SANDBOX(2, "StopPodSandbox", true),
        REMOVE_POD_SANDBOX(3, "RemovePodSandbox", true), CREATE_CONTAINER(4, "CreateContainer", false),
        POST_CREATE_CONTAINER(5, "PostCreateContainer", true), START_CONTAINER(6, "StartContainer", true),
        POST_START_CONTAINER(7, "PostStartContainer", true), UPDATE_CONTAINER(8, "UpdateContainer", false),
        POST_UPDATE_CONTAINER(9, "PostUpdateContainer", true), STOP_CONTAINER(10, "StopContainer", false),
        REMOVE_CONTAINER(11, "RemoveContainer", true), UPDATE_POD_SANDBOX(12, "UpdatePodSandbox", false),
        POST_UPDATE_POD_SANDBOX(13, "PostUpdatePodSandbox", true);

        final int number;
        final String method;
        final boolean viaStateChange;

        Event(int number, String method, boolean viaStateChange) {
            this.number = number;
            this.method = method;
            this.viaStateChange = viaStateChange;
        }

        boolean isPodEvent() {
            return method.contains("PodSandbox");
        }
    }

    /** What relaying one event came to, as the runtime sees it. */
    enum Outcome {
        /** The plugin answered with a success. */
        HANDLED,
        /** Not subscribed: the plugin was not called. */
        SKIPPED,
        /** An error answer that is not fatal: the runtime fails the container (or pod). */
        FAILED_CONTAINER,
        /** A timeout or a closed connection: the runtime drops the plugin, and the container goes on. */
        PLUGIN_DROPPED
    }

    /** NRI's ValidEvents: bits 0 to 13 (events 1 to 14). */
    static final int VALID_EVENTS = (1 << 14) - 1;
    private static final Pattern PLUGIN_NAME = Pattern.compile("[a-zA-Z0-9_.+-]+");
    private static final Pattern PLUGIN_INDEX = Pattern.compile("[0-9]{2}");

    private final Peer peer;
    private final Api api;
    private final Duration requestTimeout;
    private final RegisterPluginRequest registration;
    private final int events;
    private final List<String> calls = new ArrayList<>();
    private final List<String> warnings = new ArrayList<>();
    private final Set<Event> warned = EnumSet.noneOf(Event.class);
    private boolean wrapped;
    private boolean dropped;

    private AdaptationRuntime(Peer peer, Api api, Duration requestTimeout, RegisterPluginRequest registration, int events) {
        this.peer = peer;
        this.api = api;
        this.requestTimeout = requestTimeout;
        this.registration = registration;
        this.events = events;
    }

    /**
     * The next plugin to connect to {@code runtime}, registered and configured as the runtime does
     * it ({@code nriVersion} "" for runtimes before NRI 0.10, which do not send theirs); fails as
     * the runtime would refuse it.
     */
    static AdaptationRuntime start(FakeNriRuntime runtime, Api api, Duration registrationTimeout, Duration requestTimeout,
                                   String runtimeVersion, String nriVersion) {
        Peer peer = runtime.accept(registrationTimeout);
        RegisterPluginRequest registration = peer.awaitRegistration(registrationTimeout);
        if (!PLUGIN_NAME.matcher(registration.getPluginName()).matches()) {
            throw new AssertionError("the runtime refuses the plugin name " + registration.getPluginName());
        }
        if (!PLUGIN_INDEX.matcher(registration.getPluginIdx()).matches()) {
            throw new AssertionError("the runtime refuses the plugin index " + registration.getPluginIdx());
        }
        Reply configured = peer.configure(ConfigureRequest.newBuilder().setRuntimeName("containerd").setRuntimeVersion(runtimeVersion)
                .setRegistrationTimeout(registrationTimeout.toMillis()).setRequestTimeout(requestTimeout.toMillis())
                .setNRIVersion(nriVersion).build());
        if (!configured.ok() || configured.nanos() > requestTimeout.toNanos()) {
            throw new AssertionError("Configure failed or overran: " + configured);
        }
        int mask = configured.as(ConfigureResponse.parser()).getEvents();
        if ((mask & ~VALID_EVENTS) != 0) {
            throw new AssertionError("the runtime refuses the event mask 0x" + Integer.toHexString(mask));
        }
        return new AdaptationRuntime(peer, api, requestTimeout, registration, mask == 0 ? VALID_EVENTS : mask);
    }

    RegisterPluginRequest registration() {
        return registration;
    }

    Peer peer() {
        return peer;
    }

    boolean subscribed(Event event) {
        return (events & 1 << (event.number - 1)) != 0;
    }

    /** Every call made, as "Method" or "StateChange(event)", in order. */
    List<String> calls() {
        return List.copyOf(calls);
    }

    /** What the runtime logged about the plugin needing the deprecated StateChange: one line per event. */
    List<String> deprecationWarnings() {
        return List.copyOf(warnings);
    }

    boolean dropped() {
        return dropped;
    }

    Outcome createContainer(PodSandbox pod, Container container) {
        return relay(Event.CREATE_CONTAINER, pod, container);
    }

    Outcome startContainer(PodSandbox pod, Container container) {
        return relay(Event.START_CONTAINER, pod, container);
    }

    /** Any event, as the runtime relays it; {@code container} is ignored for a pod's. */
    Outcome relay(Event event, PodSandbox pod, Container container) {
        return subscribed(event) ? relayEvenUnsubscribed(event, pod, container) : Outcome.SKIPPED;
    }

    /** As {@link #relay}, for an event the plugin did not subscribe to too: a runtime that got its mask wrong. */
    Outcome relayEvenUnsubscribed(Event event, PodSandbox pod, Container container) {
        if (dropped) {
            return Outcome.PLUGIN_DROPPED;
        }
        boolean stateChange = event.viaStateChange && (api == Api.STATE_CHANGE || wrapped);
        Reply reply = stateChange ? stateChange(event, pod, container) : call(event.method, request(event, pod, container));
        if (reply == null) {
            return Outcome.PLUGIN_DROPPED;
        }
        if (!stateChange && reply.code() == PluginMessages.UNIMPLEMENTED && event.viaStateChange) {
            wrapped = true;
            reply = stateChange(event, pod, container);
            if (reply == null) {
                return Outcome.PLUGIN_DROPPED;
            }
        }
        if (reply.code() != 0) {
            return Outcome.FAILED_CONTAINER;
        }
        if (stateChange || wrapped && event.viaStateChange) {
            if (api == Api.DEDICATED && warned.add(event)) {
                warnings.add("plugin " + registration.getPluginIdx() + "-" + registration.getPluginName()
                        + " uses deprecated StateChange instead of a dedicated " + event.method + " RPC call");
            }
        }
        return Outcome.HANDLED;
    }

    private static MessageLite request(Event event, PodSandbox pod, Container container) {
        if (event.isPodEvent()) {
            return PodSandboxRequest.newBuilder().setPod(pod).build();
        }
        return event == Event.CREATE_CONTAINER ? CreateContainerRequest.newBuilder().setPod(pod).setContainer(container).build()
                : StartContainerRequest.newBuilder().setPod(pod).setContainer(container).build();
    }

    private Reply stateChange(Event event, PodSandbox pod, Container container) {
        StateChangeEvent.Builder change = StateChangeEvent.newBuilder().setEvent(event.number).setPod(pod);
        if (!event.isPodEvent()) {
            change.setContainer(container);
        }
        calls.add("StateChange(" + event.method + ")");
        return send("StateChange", change.build());
    }

    private Reply call(String method, MessageLite request) {
        calls.add(method);
        return send(method, request);
    }

    /** One call under the request timeout; null when it timed out or the connection closed: the plugin is dropped. */
    private Reply send(String method, MessageLite request) {
        CompletableFuture<Reply> reply = peer.send(FakeNriRuntime.PLUGIN, method, request.toByteArray(), requestTimeout.toNanos());
        try {
            return reply.get(requestTimeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException | ExecutionException e) {
            dropped = true;
            peer.close();
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
