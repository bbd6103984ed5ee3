package io.driveralias.agent.containerd;

import io.driveralias.agent.json.DescriptionTooLarge;
import com.google.protobuf.InvalidProtocolBufferException;
import io.driveralias.agent.containerd.api.LinuxRuncOptions;
import io.driveralias.agent.containerd.api.RuncOptions;
import java.io.IOException;
import java.io.InputStream;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Reads a container's record from {@code Containers.Get}'s answer as it streams in, keeping
 * only what {@link ContainerRecord} holds: the OCI spec is handed, unread, to
 * {@link OciSpecParser} as a stream, the CRI's own records are looked at only for which kind they
 * are (and a sandbox's for its runtime handler), every other label, extension and field is
 * skipped without being held. The answer itself is bounded by the client's maximum message size; what
 * this keeps, by its own bounds.
 */
final class ContainerRecordReader {

    static final String CRI_CONTAINER_RECORD = "io.cri-containerd.container.metadata";
    private static final int MAX_ID = 256;
    private static final int MAX_LABEL_KEY = 256;
    private static final int MAX_LABEL_VALUE = 1024;
    private static final int MAX_LABELS = 64;
    private static final int MAX_NAME = 4096;
    /** runc's options are a few short strings. */
    private static final int MAX_OPTIONS = 64 << 10;

    private String id = "";
    private final Map<String, String> labels = new HashMap<>();
    private String image = "";
    private String runtimeName = "";
    private Optional<String> runtimeBinary = Optional.empty();
    private OciSpec spec = OciSpec.EMPTY;
    private String snapshotter = "";
    private String snapshotKey = "";
    private ContainerRecord.CriKind cri = ContainerRecord.CriKind.NONE;
    private Optional<String> sandboxHandler = Optional.empty();

    private ContainerRecordReader() {
    }

    /** {@code GetContainerResponse{container = 1}}, the whole answer. */
    static ContainerRecord readResponse(InputStream in) throws IOException {
        ProtoInput proto = ProtoInput.of(in);
        ContainerRecordReader reader = new ContainerRecordReader();
        for (int tag = proto.nextTag(); tag != 0; tag = proto.nextTag()) {
            if (tag == tag(1, ProtoInput.LENGTH_DELIMITED)) {
                long outer = proto.enter();
                reader.container(proto);
                proto.leave(outer);
            } else {
                proto.skipField(tag);
            }
        }
        return reader.record();
    }

    private ContainerRecord record() {
        return new ContainerRecord(id, labels, image, runtimeName, runtimeBinary, spec, snapshotter, snapshotKey, cri,
                sandboxHandler);
    }

    private static int tag(int field, int wireType) {
        return field << 3 | wireType;
    }

    private void container(ProtoInput p) throws IOException {
        for (int tag = p.nextTag(); tag != 0; tag = p.nextTag()) {
            if (ProtoInput.wireType(tag) != ProtoInput.LENGTH_DELIMITED) {
                p.skipField(tag);
                continue;
            }
            switch (ProtoInput.field(tag)) {
                case 1 -> id = orEmpty(p.readString(MAX_ID));
                case 2 -> label(p);
                case 3 -> image = orEmpty(p.readString(MAX_NAME));
                case 4 -> runtime(p);
                case 5 -> spec(p);
                case 6 -> snapshotter = orEmpty(p.readString(MAX_NAME));
                case 7 -> snapshotKey = orEmpty(p.readString(MAX_NAME));
                case 10 -> extension(p);
                default -> p.skipField(tag);
            }
        }
    }

    /** A labels entry {@code {key = 1, value = 2}}: kept if it is the kubelet's or the CRI's, and short. */
    private void label(ProtoInput p) throws IOException {
        long outer = p.enter();
        String key = null;
        String value = null;
        for (int tag = p.nextTag(); tag != 0; tag = p.nextTag()) {
            if (tag == tag(1, ProtoInput.LENGTH_DELIMITED)) {
                key = p.readString(MAX_LABEL_KEY);
            } else if (tag == tag(2, ProtoInput.LENGTH_DELIMITED)) {
                value = p.readString(MAX_LABEL_VALUE);
            } else {
                p.skipField(tag);
            }
        }
        p.leave(outer);
        if (key != null && value != null && labels.size() < MAX_LABELS
                && (key.startsWith("io.kubernetes.") || key.startsWith("io.cri-containerd."))) {
            labels.put(key, value);
        }
    }

    /** {@code Runtime{name = 1, options = 2 (Any)}}. */
    private void runtime(ProtoInput p) throws IOException {
        long outer = p.enter();
        String typeUrl = "";
        byte[] options = null;
        for (int tag = p.nextTag(); tag != 0; tag = p.nextTag()) {
            if (tag == tag(1, ProtoInput.LENGTH_DELIMITED)) {
                runtimeName = orEmpty(p.readString(MAX_NAME));
            } else if (tag == tag(2, ProtoInput.LENGTH_DELIMITED)) {
                String[] type = {""};
                byte[][] value = {null};
                any(p, q -> type[0] = orEmpty(q.readString(MAX_NAME)), q -> value[0] = q.readSmallBytes(MAX_OPTIONS));
                typeUrl = type[0];
                options = value[0];
            } else {
                p.skipField(tag);
            }
        }
        p.leave(outer);
        if (options != null) {
            runtimeBinary = binaryName(typeUrl, options);
        }
    }

    /** The OCI runtime binary runc's options name, if any. */
    static Optional<String> binaryName(String typeUrl, byte[] options) {
        String type = typeUrl.substring(typeUrl.lastIndexOf('/') + 1);
        try {
            String binary = switch (type) {
                case ContainerInfoMapper.RUNC_OPTIONS -> RuncOptions.parseFrom(options).getBinaryName();
                case ContainerInfoMapper.LINUX_RUNC_OPTIONS -> LinuxRuncOptions.parseFrom(options).getRuntime();
                default -> "";
            };
            return binary.isEmpty() ? Optional.empty() : Optional.of(binary);
        } catch (InvalidProtocolBufferException e) {
            return Optional.empty();
        }
    }

    @FunctionalInterface
    private interface FieldReader {
        void read(ProtoInput p) throws IOException;
    }

    /** An embedded {@code Any{type_url = 1, value = 2}}: each of its two fields to its reader, anything else skipped. */
    private static void any(ProtoInput p, FieldReader typeUrl, FieldReader value) throws IOException {
        long outer = p.enter();
        for (int t = p.nextTag(); t != 0; t = p.nextTag()) {
            if (t == tag(1, ProtoInput.LENGTH_DELIMITED)) {
                typeUrl.read(p);
            } else if (t == tag(2, ProtoInput.LENGTH_DELIMITED)) {
                value.read(p);
            } else {
                p.skipField(t);
            }
        }
        p.leave(outer);
    }

    /** {@code spec = 5}, an {@code Any} whose value is the spec's JSON: parsed as it streams. */
    private void spec(ProtoInput p) throws IOException {
        any(p, q -> q.skipField(tag(1, ProtoInput.LENGTH_DELIMITED)), q -> {
            try (InputStream json = q.embedded()) {
                spec = OciSpecParser.parse(json);
            } catch (DescriptionTooLarge e) {
                throw e;
            } catch (IOException | RuntimeException e) {
                // Not a spec of the expected shape: read as asking for nothing (no write).
                spec = OciSpec.EMPTY;
            }
        });
    }

    /** An extensions entry {@code {key = 1, value = 2 (Any)}}: only the CRI's own records matter. */
    private void extension(ProtoInput p) throws IOException {
        long outer = p.enter();
        String key = null;
        for (int tag = p.nextTag(); tag != 0; tag = p.nextTag()) {
            if (tag == tag(1, ProtoInput.LENGTH_DELIMITED)) {
                key = p.readString(MAX_LABEL_KEY);
            } else if (tag == tag(2, ProtoInput.LENGTH_DELIMITED) && CriSandboxRecord.EXTENSION.equals(key)) {
                // protobuf writes a map entry's key first; a value before its key is skipped below.
                cri = ContainerRecord.CriKind.SANDBOX;
                any(p, q -> q.skipField(tag(1, ProtoInput.LENGTH_DELIMITED)), q -> {
                    try (InputStream json = q.embedded()) {
                        sandboxHandler = CriSandboxRecord.runtimeHandler(json);
                    }
                });
            } else {
                p.skipField(tag);
            }
        }
        p.leave(outer);
        if (CRI_CONTAINER_RECORD.equals(key) && cri == ContainerRecord.CriKind.NONE) {
            cri = ContainerRecord.CriKind.CONTAINER;
        }
    }

    private static String orEmpty(String text) {
        return text == null ? "" : text;
    }
}
