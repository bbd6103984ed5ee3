package io.driveralias.agent.nri;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The messages the runtime sends the plugin, decoded in place and bounded: the ttrpc envelope of
 * a call (its method recognised by comparing bytes, its payload left where it is), the Plugin
 * service's requests (Configure, Synchronize, CreateContainer, StartContainer, StateChange) and
 * the answer to RegisterPlugin. Field numbers are ttrpc's (Request {service 1, method 2, payload 3,
 * timeout_nano 4}; Response {status 1 {code 1, message 2}, payload 2}) and NRI's
 * (ConfigureRequest {runtime_name 2, runtime_version 3, registration_timeout 4, request_timeout 5
 * (ms), NRI_version 6}; SynchronizeRequest {pods 1, containers 2, more 3};
 * CreateContainerRequest and StartContainerRequest {pod 1, container 2}; StateChangeEvent
 * {event 1, pod 2, container 3}).
 *
 * <p>Which runtime calls what: NRI 0.6 to 0.11 (containerd 1.7 to 2.2, CRI-O up to 1.34) call
 * StartContainer as {@code StateChange{event 6}}; NRI 0.12 (containerd 2.3) calls the dedicated
 * {@code StartContainer} method and falls back to StateChange only when the plugin answers it with
 * ttrpc status 12 ({@link #UNIMPLEMENTED}). The plugin serves both forms with one handler, and
 * answers every method it does not implement with that status, never with an empty success, which
 * a 0.12 runtime would take for a StartContainer handled.
 */
final class PluginMessages {

    static final String PLUGIN_SERVICE = "nri.pkg.api.v1alpha1.Plugin";
    static final String RUNTIME_SERVICE = "nri.pkg.api.v1alpha1.Runtime";
    /** NRI's Event.CREATE_CONTAINER (the Plugin service's CreateContainer call, not a StateChange). */
    static final int CREATE_CONTAINER = 4;
    /** NRI's Event.START_CONTAINER. */
    static final int START_CONTAINER = 6;
    /** ttrpc's status code for a method (or service) the server does not have: gRPC's {@code Unimplemented}. */
    static final int UNIMPLEMENTED = 12;
    /** Pods, and containers, one Synchronize message may hand over; more is a runtime gone wrong. */
    static final int MAX_OBJECTS = 4096;
    /** The runtime's name and version, and a failure's message, as kept for the log. */
    private static final int MAX_TEXT = 256;

    private static final byte[] PLUGIN = PLUGIN_SERVICE.getBytes(StandardCharsets.US_ASCII);

    /** The Plugin service's methods the plugin implements; everything else ({@code OTHER}) is answered Unimplemented. */
    enum Method {
        CONFIGURE("Configure"), SYNCHRONIZE("Synchronize"), CREATE_CONTAINER("CreateContainer"), START_CONTAINER("StartContainer"),
        STATE_CHANGE("StateChange"), SHUTDOWN("Shutdown"), OTHER("");

        private final String wireName;
        private final byte[] name;

        Method(String name) {
            this.wireName = name;
            this.name = name.getBytes(StandardCharsets.US_ASCII);
        }
    }

    /**
     * A call's envelope.
     *
     * @param label         what to call it in a log line (escaped by the caller)
     * @param unimplemented the message of an Unimplemented answer to it, as ttrpc's server words
     *                      it: "service NAME" for a service the plugin does not serve, else "method NAME"
     * @param payload       the request message's span in the buffer it came in
     * @param timeoutNano   the caller's own deadline for it, from now (0: none given)
     */
    record Call(Method method, String label, String unimplemented, long payload, long timeoutNano) {
    }

    /** @param nriVersion the runtime's NRI module version ("" from runtimes before NRI 0.10, which do not say) */
    record Configure(String runtimeName, String runtimeVersion, long registrationTimeoutMs, long requestTimeoutMs,
                     String nriVersion) {
    }

    /** A StateChangeEvent; pod and container decoded only for StartContainer, null otherwise. */
    record StateChange(int event, NriPod pod, NriContainer container) {
    }

    /**
     * A CreateContainerRequest (the container before the runtime stores it, no process yet) or a
     * StartContainerRequest (its process made, its first instruction waiting): the same two fields.
     */
    record PodAndContainer(NriPod pod, NriContainer container) {
    }

    /** The status of a response: code 0 is success. */
    record Reply(int code, String message) {
    }

    private PluginMessages() {
    }

    static Call call(ProtoReader in) throws NriProtocolException {
        long service = -1;
        long method = -1;
        long payload = 0;
        long timeout = 0;
        while (in.hasMore()) {
            int tag = in.tag();
            switch (tag) {
                case 1 << 3 | ProtoReader.LENGTH -> service = in.span(tag);
                case 2 << 3 | ProtoReader.LENGTH -> method = in.span(tag);
                case 3 << 3 | ProtoReader.LENGTH -> payload = in.span(tag);
                case 4 << 3 | ProtoReader.VARINT -> timeout = in.varint();
                default -> in.skip(tag);
            }
        }
        Method known = Method.OTHER;
        boolean plugin = service != -1 && in.equalTo(service, PLUGIN);
        if (plugin && method != -1) {
            for (Method m : Method.values()) {
                if (m != Method.OTHER && in.equalTo(method, m.name)) {
                    known = m;
                }
            }
        }
        if (known != Method.OTHER) {
            return new Call(known, known.wireName, "", payload, Math.max(0, timeout));
        }
        String label = text(in, service) + "/" + text(in, method);
        return new Call(known, label, plugin ? "method " + text(in, method) : "service " + text(in, service), payload,
                Math.max(0, timeout));
    }

    static Configure configure(ProtoReader in) throws NriProtocolException {
        String name = "";
        String version = "";
        String nriVersion = "";
        long registration = 0;
        long request = 0;
        while (in.hasMore()) {
            int tag = in.tag();
            switch (tag) {
                case 2 << 3 | ProtoReader.LENGTH -> name = text(in, in.span(tag));
                case 3 << 3 | ProtoReader.LENGTH -> version = text(in, in.span(tag));
                case 4 << 3 | ProtoReader.VARINT -> registration = in.varint();
                case 5 << 3 | ProtoReader.VARINT -> request = in.varint();
                case 6 << 3 | ProtoReader.LENGTH -> nriVersion = text(in, in.span(tag));
                default -> in.skip(tag);
            }
        }
        return new Configure(name, version, registration, request, nriVersion);
    }

    static NriSync synchronize(ProtoReader in) throws NriProtocolException {
        ObjectDecoder decoder = new ObjectDecoder();
        List<NriPod> pods = new ArrayList<>();
        List<NriContainer> containers = new ArrayList<>();
        boolean more = false;
        int dropped = 0;
        while (in.hasMore()) {
            int tag = in.tag();
            switch (tag) {
                case 1 << 3 | ProtoReader.LENGTH -> {
                    long span = in.span(tag);
                    if (pods.size() < MAX_OBJECTS) {
                        pods.add(decoder.pod(in.reader(span)));
                    } else {
                        dropped++;
                    }
                }
                case 2 << 3 | ProtoReader.LENGTH -> {
                    long span = in.span(tag);
                    if (containers.size() < MAX_OBJECTS) {
                        containers.add(decoder.container(in.reader(span)));
                    } else {
                        dropped++;
                    }
                }
                case 3 << 3 | ProtoReader.VARINT -> more = in.varint() != 0;
                default -> in.skip(tag);
            }
        }
        return new NriSync(pods, containers, !more, dropped);
    }

    static StateChange stateChange(ProtoReader in) throws NriProtocolException {
        long event = 0;
        long pod = -1;
        long container = -1;
        while (in.hasMore()) {
            int tag = in.tag();
            switch (tag) {
                case 1 << 3 | ProtoReader.VARINT -> event = in.varint();
                case 2 << 3 | ProtoReader.LENGTH -> pod = in.span(tag);
                case 3 << 3 | ProtoReader.LENGTH -> container = in.span(tag);
                default -> in.skip(tag);
            }
        }
        if (event != START_CONTAINER) {
            return new StateChange((int) Math.min(event, Integer.MAX_VALUE), null, null);
        }
        ObjectDecoder decoder = new ObjectDecoder();
        return new StateChange(START_CONTAINER, pod(in, decoder, pod),
                container == -1 ? null : decoder.container(in.reader(container)));
    }

    /** CreateContainerRequest and StartContainerRequest alike. */
    static PodAndContainer podAndContainer(ProtoReader in) throws NriProtocolException {
        long pod = -1;
        long container = -1;
        while (in.hasMore()) {
            int tag = in.tag();
            switch (tag) {
                case 1 << 3 | ProtoReader.LENGTH -> pod = in.span(tag);
                case 2 << 3 | ProtoReader.LENGTH -> container = in.span(tag);
                default -> in.skip(tag);
            }
        }
        ObjectDecoder decoder = new ObjectDecoder();
        return new PodAndContainer(pod(in, decoder, pod), container == -1 ? null : decoder.container(in.reader(container)));
    }

    /** The pod at {@code span}, or an empty one where the message has none. */
    private static NriPod pod(ProtoReader in, ObjectDecoder decoder, long span) throws NriProtocolException {
        return span == -1 ? NriPod.UNKNOWN : decoder.pod(in.reader(span));
    }

    static Reply reply(ProtoReader in) throws NriProtocolException {
        int code = 0;
        String message = "";
        while (in.hasMore()) {
            int tag = in.tag();
            if (tag == (1 << 3 | ProtoReader.LENGTH)) {
                ProtoReader status = in.reader(in.span(tag));
                while (status.hasMore()) {
                    int field = status.tag();
                    switch (field) {
                        case 1 << 3 | ProtoReader.VARINT -> code = (int) status.varint();
                        case 2 << 3 | ProtoReader.LENGTH -> message = text(status, status.span(field));
                        default -> status.skip(field);
                    }
                }
            } else {
                in.skip(tag);
            }
        }
        return new Reply(code, message);
    }

    /** Text for a log line: at most {@link #MAX_TEXT} bytes of it (the caller escapes it). */
    private static String text(ProtoReader in, long span) {
        if (span == -1) {
            return "";
        }
        long cut = (long) ProtoReader.offset(span) << 32 | Math.min(ProtoReader.length(span), MAX_TEXT);
        return in.string(cut);
    }
}
