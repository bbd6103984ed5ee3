package io.driveralias.agent.nri;

import io.driveralias.agent.core.GpuRequest;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * NRI's PodSandbox and Container messages decoded with bounds, straight from the buffer the
 * message arrived in. A pod steers much of a Container (its environment, labels, annotations,
 * mounts, arguments): the decoder keeps only what the agent uses and moves past the rest without
 * reading it, so a 4 MB environment value or ten thousand labels cost an index move each.
 *
 * <p>Bounds: a kept string is at most {@link #MAX_STRING} bytes (a longer one is left out and
 * counted as truncated), a kept list or map at most {@link #MAX_ENTRIES} entries, what one
 * container keeps of its lists and maps at most {@link #RECORD_BUDGET} bytes (so that the agent may
 * hold a record per container without a hostile pod's costing more than that), and one message at
 * most {@link #MESSAGE_BUDGET} bytes of kept text and entries whatever number of objects it carries.
 * Entries past a bound are left out, and the record says it was over its bounds. Identity fields
 * (ids, names, pid, state) are always kept, each at most {@link #MAX_STRING} bytes: at most the
 * message's own size in all. Costs are counted as the bytes of the text plus a fixed estimate of
 * the objects around it. One decoder per message, on one thread.
 *
 * <p>Text costs what it will cost decoded: bytes that are not all ASCII are charged twice (a
 * Java string of them takes two bytes a character, and each malformed byte becomes a character of
 * its own), so that a hostile runtime's invalid UTF-8 cannot double what a bound allows. A
 * container's id is kept only if it is one by containerd's rules (as its event decoder checks), so
 * that no runtime can make the agent key its bookkeeping by kilobytes of text.
 *
 * <p>NRI's field numbers (pkg/api/api.proto): PodSandbox {id 1, name 2, uid 3, namespace 4,
 * runtime_handler 7}; Container {id 1, pod_sandbox_id 2, name 3, state 4, labels 5, annotations 6,
 * env 8, mounts 9, linux 11, pid 12, CDI_devices 20, image 22}; Mount {destination 1, type 2,
 * source 3, options 4}; LinuxContainer {devices 2}; LinuxDevice {path 1}; CDIDevice {name 1}; Image
 * {name 1}; map entries {key 1, value 2}.
 */
final class ObjectDecoder {

    static final int MAX_STRING = 4096;
    /** containerd's own bound on an identifier (and its characters: {@link #isContainerId}). */
    static final int MAX_ID = 76;
    static final int MAX_ENTRIES = 1024;
    static final long RECORD_BUDGET = 64 << 10;
    static final long MESSAGE_BUDGET = 1 << 20;
    /** What a kept string or entry costs beyond its bytes (object headers, references), for the budget. */
    private static final int STRING_COST = 48;
    private static final int ENTRY_COST = 32;

    private static final byte[] KUBERNETES_LABEL = ascii("io.kubernetes.");
    private static final byte[] CRI_ANNOTATION = ascii("io.kubernetes.cri.");
    private static final byte[] CDI_ANNOTATION = ascii("cdi.k8s.io/");
    private static final byte[] NVIDIA_ENV = ascii("NVIDIA_");
    private static final byte[] NVIDIA_DEVICE = ascii("/dev/nvidia");
    private static final byte[] NVIDIA_CDI = ascii(GpuRequest.NVIDIA_CDI_VENDOR);
    private static final byte[] BIND = ascii("bind");
    private static final byte[] RBIND = ascii("rbind");

    private static final int TAG_ID = tag(1, ProtoReader.LENGTH);
    private static final int TAG_2 = tag(2, ProtoReader.LENGTH);
    private static final int TAG_3 = tag(3, ProtoReader.LENGTH);
    private static final int TAG_4 = tag(4, ProtoReader.LENGTH);
    private static final int TAG_STATE = tag(4, ProtoReader.VARINT);
    private static final int TAG_5 = tag(5, ProtoReader.LENGTH);
    private static final int TAG_6 = tag(6, ProtoReader.LENGTH);
    private static final int TAG_7 = tag(7, ProtoReader.LENGTH);
    private static final int TAG_ENV = tag(8, ProtoReader.LENGTH);
    private static final int TAG_MOUNTS = tag(9, ProtoReader.LENGTH);
    private static final int TAG_LINUX = tag(11, ProtoReader.LENGTH);
    private static final int TAG_PID = tag(12, ProtoReader.VARINT);
    private static final int TAG_CDI_DEVICES = tag(20, ProtoReader.LENGTH);
    private static final int TAG_IMAGE = tag(22, ProtoReader.LENGTH);
    /** The CRI's own annotation of a container's image (containerd), where NRI before 0.12 has no image field. */
    private static final String CRI_IMAGE_ANNOTATION = "io.kubernetes.cri.image-name";

    /** Readers of nested messages (an entry, a mount, a device), reused: the decoder allocates only what it keeps. */
    private final ProtoReader nested = new ProtoReader(ByteBuffer.allocate(0), 0, 0);
    private final ProtoReader nestedTwice = new ProtoReader(ByteBuffer.allocate(0), 0, 0);
    private long budget = MESSAGE_BUDGET;
    private long recordBudget;
    private int truncated;
    private boolean overBounds;

    static int tag(int number, int wireType) {
        return number << 3 | wireType;
    }

    private static byte[] ascii(String text) {
        return text.getBytes(StandardCharsets.US_ASCII);
    }

    NriPod pod(ProtoReader in) throws NriProtocolException {
        truncated = 0;
        String id = "";
        String name = "";
        String uid = "";
        String namespace = "";
        String handler = "";
        while (in.hasMore()) {
            int tag = in.tag();
            if (tag == TAG_ID) {
                id = identity(in, in.span(tag));
            } else if (tag == TAG_2) {
                name = identity(in, in.span(tag));
            } else if (tag == TAG_3) {
                uid = identity(in, in.span(tag));
            } else if (tag == TAG_4) {
                namespace = identity(in, in.span(tag));
            } else if (tag == TAG_7) {
                handler = identity(in, in.span(tag));
            } else {
                in.skip(tag);
            }
        }
        return new NriPod(id, name, uid, namespace, handler, truncated);
    }

    NriContainer container(ProtoReader in) throws NriProtocolException {
        truncated = 0;
        overBounds = false;
        recordBudget = RECORD_BUDGET;
        String id = "";
        String pod = "";
        String name = "";
        NriContainer.State state = NriContainer.State.UNKNOWN;
        int pid = 0;
        Map<String, String> labels = new LinkedHashMap<>();
        Map<String, String> annotations = new LinkedHashMap<>();
        List<String> env = new ArrayList<>();
        List<NriMount> mounts = new ArrayList<>();
        boolean nvidiaDevice = false;
        boolean nvidiaCdi = false;
        String image = null;
        while (in.hasMore()) {
            int tag = in.tag();
            if (tag == TAG_ID) {
                id = containerId(in, in.span(tag));
            } else if (tag == TAG_2) {
                pod = identity(in, in.span(tag));
            } else if (tag == TAG_3) {
                name = identity(in, in.span(tag));
            } else if (tag == TAG_STATE) {
                state = NriContainer.State.of(in.varint());
            } else if (tag == TAG_5) {
                entry(in, in.span(tag), KUBERNETES_LABEL, null, labels);
            } else if (tag == TAG_6) {
                entry(in, in.span(tag), CRI_ANNOTATION, CDI_ANNOTATION, annotations);
            } else if (tag == TAG_ENV) {
                environment(in, in.span(tag), env);
            } else if (tag == TAG_MOUNTS) {
                mount(nested.moveTo(in, in.span(tag)), mounts);
            } else if (tag == TAG_LINUX) {
                nvidiaDevice |= nvidiaDevice(nested.moveTo(in, in.span(tag)));
            } else if (tag == TAG_PID) {
                long value = in.varint();
                pid = value > 0 && value <= Integer.MAX_VALUE ? (int) value : 0;
            } else if (tag == TAG_CDI_DEVICES) {
                nvidiaCdi |= nvidiaCdiDevice(nested.moveTo(in, in.span(tag)));
            } else if (tag == TAG_IMAGE) {
                image = imageName(nested.moveTo(in, in.span(tag)));
            } else {
                in.skip(tag);
            }
        }
        if (image == null) {
            image = annotations.getOrDefault(CRI_IMAGE_ANNOTATION, "");
        }
        return new NriContainer(id, pod, name, image, state, pid, labels, annotations, env, mounts, nvidiaDevice, nvidiaCdi,
                truncated, overBounds);
    }

    /** An identity field: kept whatever the budget (charged all the same), "" when over {@link #MAX_STRING}. */
    private String identity(ProtoReader in, long span) {
        if (ProtoReader.length(span) > MAX_STRING) {
            truncated++;
            return "";
        }
        budget -= STRING_COST + decodedSize(in, span);
        return in.string(span);
    }

    /** The container's id, or "" when it is none by containerd's rules (looked at in place: nothing decoded). */
    private String containerId(ProtoReader in, long span) {
        if (!isContainerId(in, span)) {
            truncated++;
            return "";
        }
        budget -= STRING_COST + ProtoReader.length(span);
        return in.string(span);
    }

    /**
     * containerd's identifier rule (its {@code identifiers.Validate}): 1 to {@value #MAX_ID} characters,
     * runs of ASCII letters and digits joined by single {@code .}, {@code _} or {@code -}.
     */
    static boolean isContainerId(ProtoReader in, long span) {
        int length = ProtoReader.length(span);
        if (length == 0 || length > MAX_ID) {
            return false;
        }
        boolean afterSeparator = true;
        for (int i = 0; i < length; i++) {
            byte b = in.byteAt(span, i);
            boolean alphanumeric = b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z';
            if (alphanumeric) {
                afterSeparator = false;
            } else if ((b == '.' || b == '_' || b == '-') && !afterSeparator) {
                afterSeparator = true;
            } else {
                return false;
            }
        }
        return !afterSeparator;
    }

    /** What the bytes of {@code span} take as a Java string: one byte each when all ASCII, else two. */
    private static long decodedSize(ProtoReader in, long span) {
        return in.isAscii(span) ? ProtoReader.length(span) : 2L * ProtoReader.length(span);
    }

    /** A string to keep if it fits its bound and the message's budget; null when left out. */
    private String kept(ProtoReader in, long span) {
        if (ProtoReader.length(span) > MAX_STRING) {
            truncated++;
            return null;
        }
        if (!afford(STRING_COST + decodedSize(in, span))) {
            return null;
        }
        return in.string(span);
    }

    private boolean afford(long cost) {
        if (budget < cost || recordBudget < cost) {
            overBounds = true;
            return false;
        }
        budget -= cost;
        recordBudget -= cost;
        return true;
    }

    /** What the last container kept of its lists and maps, as the budget counts it. */
    long lastRecordCost() {
        return RECORD_BUDGET - recordBudget;
    }

    /** A map entry {key 1, value 2} kept when its key starts with one of the prefixes. */
    private void entry(ProtoReader outer, long span, byte[] prefix, byte[] otherPrefix, Map<String, String> into)
            throws NriProtocolException {
        ProtoReader in = nested.moveTo(outer, span);
        long key = -1;
        long value = -1;
        while (in.hasMore()) {
            int tag = in.tag();
            if (tag == TAG_ID) {
                key = in.span(tag);
            } else if (tag == TAG_2) {
                value = in.span(tag);
            } else {
                in.skip(tag);
            }
        }
        if (key == -1 || !(in.startsWith(key, prefix) || otherPrefix != null && in.startsWith(key, otherPrefix))) {
            return;
        }
        if (into.size() >= MAX_ENTRIES) {
            overBounds = true;
            return;
        }
        int valueLength = value == -1 ? 0 : ProtoReader.length(value);
        if (ProtoReader.length(key) > MAX_STRING || valueLength > MAX_STRING) {
            truncated++;
            return;
        }
        if (!afford(ENTRY_COST + 2L * STRING_COST + decodedSize(in, key) + (value == -1 ? 0 : decodedSize(in, value)))) {
            return;
        }
        into.put(in.string(key), value == -1 ? "" : in.string(value));
    }

    /** An environment entry, kept when it starts with NVIDIA_; its prefix is read in place, whatever its length. */
    private void environment(ProtoReader in, long span, List<String> into) {
        if (!in.startsWith(span, NVIDIA_ENV)) {
            return;
        }
        if (into.size() >= MAX_ENTRIES) {
            overBounds = true;
            return;
        }
        String entry = kept(in, span);
        if (entry != null) {
            into.add(entry);
        }
    }

    /** A mount, kept when it binds (type bind, or option bind or rbind): looked at in place first, read only if kept. */
    private void mount(ProtoReader in, List<NriMount> into) throws NriProtocolException {
        long destination = -1;
        long type = -1;
        long source = -1;
        boolean bind = false;
        int options = 0;
        while (in.hasMore()) {
            int tag = in.tag();
            if (tag == TAG_ID) {
                destination = in.span(tag);
            } else if (tag == TAG_2) {
                type = in.span(tag);
                bind |= in.equalTo(type, BIND);
            } else if (tag == TAG_3) {
                source = in.span(tag);
            } else if (tag == TAG_4) {
                long option = in.span(tag);
                bind |= in.equalTo(option, BIND) || in.equalTo(option, RBIND);
                options++;
            } else {
                in.skip(tag);
            }
        }
        if (!bind) {
            return;
        }
        if (into.size() >= MAX_ENTRIES || options > MAX_ENTRIES) {
            overBounds = true;
            return;
        }
        // proto3 leaves an empty string off the wire: a field not seen is "".
        String dst = destination == -1 ? "" : kept(in, destination);
        String src = dst == null ? null : source == -1 ? "" : kept(in, source);
        String typeText = src == null ? null : type == -1 ? "" : kept(in, type);
        if (typeText == null || !afford(ENTRY_COST)) {
            return;
        }
        List<String> optionTexts = new ArrayList<>(options);
        in.rewind();
        while (in.hasMore()) {
            int tag = in.tag();
            if (tag == TAG_4) {
                String option = kept(in, in.span(tag));
                if (option == null) {
                    return;
                }
                optionTexts.add(option);
            } else {
                in.skip(tag);
            }
        }
        into.add(new NriMount(dst, typeText, src, optionTexts));
    }

    /** An Image (NRI 0.12): its name (field 1), an identity field; "" when it has none. */
    private String imageName(ProtoReader in) throws NriProtocolException {
        String name = "";
        while (in.hasMore()) {
            int tag = in.tag();
            if (tag == TAG_ID) {
                name = identity(in, in.span(tag));
            } else {
                in.skip(tag);
            }
        }
        return name;
    }

    /** A CDIDevice: whether its name (field 1) is one of NVIDIA's kinds ({@link GpuRequest#isNvidiaCdiDevice}, read in place). */
    private static boolean nvidiaCdiDevice(ProtoReader in) throws NriProtocolException {
        boolean found = false;
        while (in.hasMore()) {
            int tag = in.tag();
            if (tag == TAG_ID) {
                found |= in.startsWith(in.span(tag), NVIDIA_CDI);
            } else {
                in.skip(tag);
            }
        }
        return found;
    }

    /** LinuxContainer: whether any of its devices (field 2, LinuxDevice.path 1) is under /dev/nvidia. */
    private boolean nvidiaDevice(ProtoReader in) throws NriProtocolException {
        boolean found = false;
        while (in.hasMore()) {
            int tag = in.tag();
            if (tag == TAG_2) {
                ProtoReader device = nestedTwice.moveTo(in, in.span(tag));
                while (device.hasMore()) {
                    int field = device.tag();
                    if (field == TAG_ID) {
                        found |= device.startsWith(device.span(field), NVIDIA_DEVICE);
                    } else {
                        device.skip(field);
                    }
                }
            } else {
                in.skip(tag);
            }
        }
        return found;
    }
}
