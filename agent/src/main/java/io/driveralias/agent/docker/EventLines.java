package io.driveralias.agent.docker;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.driveralias.agent.live.ContainerRuntime;
import java.io.IOException;
import java.io.InputStream;
import java.util.Optional;

/**
 * Docker's event stream: one JSON object a line, for as long as the subscription lasts. Each
 * read fills a small buffer; each line is kept up to {@link #MAX_LINE} bytes, and the rest of a
 * longer one (a container with huge labels: they come last, in {@code Actor.Attributes}) is
 * dropped, its head still read for the fields the agent uses. Only those fields are parsed.
 */
final class EventLines {

    static final int MAX_LINE = 64 * 1024;
    private static final JsonFactory JSON = new JsonFactory();

    private final InputStream in;
    private final byte[] buffer = new byte[8192];
    private final byte[] line = new byte[MAX_LINE];
    private int position;
    private int limit;

    EventLines(InputStream in) {
        this.in = in;
    }

    /** The next container event; empty at the end of the stream. Lines that are not one are skipped. */
    Optional<ContainerRuntime.Event> next() throws IOException {
        while (true) {
            int length = readLine();
            if (length < 0) {
                return Optional.empty();
            }
            Optional<ContainerRuntime.Event> event = parse(line, length);
            if (event.isPresent()) {
                return event;
            }
        }
    }

    /** Reads up to the next newline into {@link #line}; returns its kept length, -1 at the end. */
    private int readLine() throws IOException {
        int length = 0;
        boolean any = false;
        while (true) {
            if (position == limit) {
                limit = in.read(buffer, 0, buffer.length);
                position = 0;
                if (limit <= 0) {
                    limit = 0;
                    return any ? length : -1;
                }
            }
            any = true;
            while (position < limit) {
                byte b = buffer[position++];
                if (b == '\n') {
                    return length;
                }
                if (length < MAX_LINE) {
                    line[length++] = b;
                }
            }
        }
    }

    /** The event on one line, from its top-level fields and {@code Actor.ID}; a cut line gives what its head holds. */
    static Optional<ContainerRuntime.Event> parse(byte[] bytes, int length) {
        String status = null;
        String id = null;
        String type = null;
        String action = null;
        String actorId = null;
        long time = -1;
        long timeNano = -1;
        try (JsonParser p = JSON.createParser(bytes, 0, length)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return Optional.empty();
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken value = p.nextToken();
                switch (name) {
                    case "status" -> status = text(p, value);
                    case "id" -> id = text(p, value);
                    case "Type" -> type = text(p, value);
                    case "Action" -> action = text(p, value);
                    case "time" -> time = value == JsonToken.VALUE_NUMBER_INT ? p.getLongValue() : -1;
                    case "timeNano" -> timeNano = value == JsonToken.VALUE_NUMBER_INT ? p.getLongValue() : -1;
                    case "Actor" -> actorId = actorId(p, value);
                    default -> p.skipChildren();
                }
            }
        } catch (IOException e) {
            // A line cut at the bound, or not JSON: what was read before the break stands.
        }
        String container = actorId != null ? actorId : id;
        String what = action != null ? action : status;
        if (container == null || container.isEmpty() || what == null || (type != null && !type.equals("container"))) {
            return Optional.empty();
        }
        String position = since(time, timeNano);
        return action(what).map(a -> new ContainerRuntime.Event(container, a, what, position));
    }

    /** Docker's action in the agent's words; empty for an action the agent does not follow. */
    static Optional<ContainerRuntime.Action> action(String dockerAction) {
        return Optional.ofNullable(switch (dockerAction) {
            case "create" -> ContainerRuntime.Action.CREATED;
            case "start" -> ContainerRuntime.Action.STARTED;
            case "die" -> ContainerRuntime.Action.EXITED;
            case "destroy" -> ContainerRuntime.Action.REMOVED;
            default -> null;
        });
    }

    private static String actorId(JsonParser p, JsonToken value) throws IOException {
        if (value != JsonToken.START_OBJECT) {
            p.skipChildren();
            return null;
        }
        String found = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken v = p.nextToken();
            if (name.equals("ID")) {
                found = text(p, v);
            } else {
                p.skipChildren();
            }
        }
        return found;
    }

    private static String text(JsonParser p, JsonToken value) throws IOException {
        if (value == JsonToken.VALUE_STRING) {
            return p.getText();
        }
        p.skipChildren();
        return null;
    }

    /** Docker's {@code since} text for an event's time: "seconds.nanoseconds", or "" if unknown. */
    static String since(long time, long timeNano) {
        if (timeNano > 0) {
            String nanos = Long.toString(timeNano % 1_000_000_000L);
            return (timeNano / 1_000_000_000L) + "." + "0".repeat(9 - nanos.length()) + nanos;
        }
        return time > 0 ? Long.toString(time) : "";
    }
}
