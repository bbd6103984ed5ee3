package io.driveralias.agent.containerd;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import io.driveralias.agent.containerd.api.ContainerCreate;
import io.driveralias.agent.containerd.api.ContainerDelete;
import io.driveralias.agent.containerd.api.Envelope;
import io.driveralias.agent.containerd.api.TaskCreate;
import io.driveralias.agent.containerd.api.TaskDelete;
import io.driveralias.agent.containerd.api.TaskExit;
import io.driveralias.agent.containerd.api.TaskStart;
import io.driveralias.agent.core.Printable;
import io.driveralias.agent.live.ContainerRuntime;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * containerd's events in the agent's words. An envelope says its topic; its payload is an
 * {@code Any} whose type URL has no '/' ({@code containerd.events.TaskCreate}), so the payload is
 * read by topic, not by type. containerd keeps no history: an event has no position to resume
 * from. Anything malformed is skipped (logged at DEBUG): one odd event never ends the stream.
 */
final class EventDecoder {

    private static final Logger LOG = LoggerFactory.getLogger(EventDecoder.class);

    static final String CONTAINER_CREATE = "/containers/create";
    static final String TASK_CREATE = "/tasks/create";
    static final String TASK_START = "/tasks/start";
    static final String TASK_EXIT = "/tasks/exit";
    static final String TASK_DELETE = "/tasks/delete";
    static final String CONTAINER_DELETE = "/containers/delete";
    static final List<String> TOPICS = List.of(CONTAINER_CREATE, TASK_CREATE, TASK_START, TASK_EXIT, TASK_DELETE,
            CONTAINER_DELETE);
    /** containerd's identifiers: alphanumerics separated by single '.', '_' or '-', at most 76 characters. */
    static final Pattern ID = Pattern.compile("[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)*");
    static final int MAX_ID = 76;

    private EventDecoder() {
    }

    /** The event an envelope of {@code namespace} carries; empty for another namespace, topic, or an exec's process. */
    static Optional<ContainerRuntime.Event> decode(Envelope envelope, String namespace) {
        if (!envelope.getNamespace().equals(namespace)) {
            return Optional.empty();
        }
        String topic = envelope.getTopic();
        ByteString value = envelope.getEvent().getValue();
        try {
            return switch (topic) {
                case CONTAINER_CREATE -> event(ContainerCreate.parseFrom(value).getId(), ContainerRuntime.Action.CREATED, topic);
                case TASK_CREATE -> {
                    TaskCreate create = TaskCreate.parseFrom(value);
                    yield event(create.getContainerId(), ContainerRuntime.Action.PROCESS_CREATED, topic)
                            .map(e -> new ContainerRuntime.Event(e.containerId(), e.action(), topic, "", create.getPid()));
                }
                case TASK_START -> {
                    // Its pid too: the start job it makes then reuses the create's description, no round trip
                    // (under a burst, a full description of a start already examined cost 100-250 ms of a worker).
                    TaskStart start = TaskStart.parseFrom(value);
                    yield event(start.getContainerId(), ContainerRuntime.Action.STARTED, topic)
                            .map(e -> new ContainerRuntime.Event(e.containerId(), e.action(), topic, "", start.getPid()));
                }
                case TASK_EXIT -> {
                    TaskExit exit = TaskExit.parseFrom(value);
                    yield initProcess(exit.getContainerId(), exit.getId())
                            ? event(exit.getContainerId(), ContainerRuntime.Action.EXITED, topic) : Optional.empty();
                }
                case TASK_DELETE -> {
                    TaskDelete delete = TaskDelete.parseFrom(value);
                    yield initProcess(delete.getContainerId(), delete.getId())
                            ? event(delete.getContainerId(), ContainerRuntime.Action.EXITED, topic) : Optional.empty();
                }
                case CONTAINER_DELETE -> event(ContainerDelete.parseFrom(value).getId(), ContainerRuntime.Action.REMOVED, topic);
                default -> Optional.empty();
            };
        } catch (InvalidProtocolBufferException e) {
            LOG.debug("containerd event {} skipped: not a valid payload ({})", Printable.of(topic), Printable.of(e.getMessage()));
            return Optional.empty();
        }
    }

    /** An exec'd process has its own id; the container's own (init) process has the container's id, or none. */
    private static boolean initProcess(String containerId, String processId) {
        return processId.isEmpty() || processId.equals(containerId);
    }

    private static Optional<ContainerRuntime.Event> event(String id, ContainerRuntime.Action action, String topic) {
        if (!isContainerId(id)) {
            LOG.debug("containerd event {} skipped: not a container id: {}", topic, Printable.of(id));
            return Optional.empty();
        }
        return Optional.of(new ContainerRuntime.Event(id, action, topic, ""));
    }

    static boolean isContainerId(String id) {
        return id.length() <= MAX_ID && ID.matcher(id).matches();
    }
}
