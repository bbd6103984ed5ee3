package io.driveralias.agent.docker;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.github.dockerjava.transport.DockerHttpClient;
import com.github.dockerjava.zerodep.ZerodepDockerHttpClient;
import io.driveralias.agent.core.Printable;
import io.driveralias.agent.json.DescriptionTooLarge;
import io.driveralias.agent.live.ContainerRuntime;
import io.driveralias.agent.live.ContainerRuntimeException;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;

/**
 * Plain GET requests on Docker's socket, through docker-java's zerodep transport: every answer
 * bounded, read as it streams by the caller's reader, errors sorted into the port's types once
 * (a daemon that cannot be reached, one that answers an error, one whose answer is not JSON).
 * The event stream has its own client, without a response timeout.
 */
final class DockerApi implements AutoCloseable {

    private static final int MAX_ERROR = 300;

    private final DockerHttpClient http;
    private final DockerHttpClient streamHttp;

    private DockerApi(DockerHttpClient http, DockerHttpClient streamHttp) {
        this.http = http;
        this.streamHttp = streamHttp;
    }

    static DockerApi connect(String dockerHost) {
        URI uri = URI.create(dockerHost);
        DockerHttpClient http = new ZerodepDockerHttpClient.Builder().dockerHost(uri)
                .connectionTimeout(Duration.ofSeconds(5)).responseTimeout(Duration.ofSeconds(30))
                .maxConnections(16).build();
        // The event stream stays open for days: no response timeout on its own client.
        DockerHttpClient streamHttp = new ZerodepDockerHttpClient.Builder().dockerHost(uri)
                .connectionTimeout(Duration.ofSeconds(5)).maxConnections(2).build();
        return new DockerApi(http, streamHttp);
    }

    /** Reads a whole answer's body, bounded, as it streams (a list read for its ids alone). */
    @FunctionalInterface
    interface BodyReader<T> {
        T read(InputStream body) throws IOException;
    }

    /** A 2xx answer's body, read by {@code reader}; anything else an error. */
    <T> T readBody(String path, long max, BodyReader<T> reader) throws ContainerRuntimeException {
        try (DockerHttpClient.Response response = execute(http, get(path));
             InputStream body = new BoundedInput(response.getBody(), max)) {
            requireOk(path, response.getStatusCode(), body);
            return reader.read(body);
        } catch (IOException e) {
            throw new ContainerRuntimeException.Unreachable("reading " + path + ": " + e.getMessage(), e);
        }
    }

    /** Docker's event stream at {@code path}, once Docker answered; closing it (from any thread) ends a read in progress. */
    ContainerRuntime.EventStream events(String path) throws ContainerRuntimeException {
        DockerHttpClient.Response response = execute(streamHttp, get(path));
        try {
            InputStream body = response.getBody();
            requireOk(path, response.getStatusCode(), body);
            return new Subscription(response, new EventLines(body));
        } catch (IOException | ContainerRuntimeException | RuntimeException e) {
            response.close();
            throw e instanceof ContainerRuntimeException d ? d
                    : new ContainerRuntimeException.Unreachable("reading " + path + ": " + e.getMessage(), e);
        }
    }

    /** One open event stream; closing the response (from any thread) ends a read in progress. */
    private record Subscription(DockerHttpClient.Response response, EventLines lines) implements ContainerRuntime.EventStream {
        @Override
        public Optional<ContainerRuntime.Event> next() throws ContainerRuntimeException {
            try {
                return lines.next();
            } catch (IOException | RuntimeException e) {
                throw new ContainerRuntimeException.Unreachable("event stream: " + e.getMessage(), e);
            }
        }

        @Override
        public void close() {
            try {
                response.close();
            } catch (RuntimeException ignored) {
                // Closing a stream that already broke.
            }
        }
    }

    /** Reads what it needs of an answer as it streams in; the rest of the body is left unread. */
    @FunctionalInterface
    interface AnswerReader<T> {
        T read(JsonParser parser) throws IOException;
    }

    /** The answer to a GET: a 2xx, read by {@code reader}; anything else an error. */
    <T> T read(String path, long max, AnswerReader<T> reader) throws ContainerRuntimeException {
        Optional<T> answer = readOrNotFound(path, max, reader);
        return answer.orElseThrow(() -> new ContainerRuntimeException(path + ": HTTP 404"));
    }

    /** The same, with a 404 answered as empty (the caller's to interpret). */
    <T> Optional<T> readOrNotFound(String path, long max, AnswerReader<T> reader) throws ContainerRuntimeException {
        try (DockerHttpClient.Response response = execute(http, get(path));
             InputStream body = new BoundedInput(response.getBody(), max)) {
            int status = response.getStatusCode();
            if (status == 404) {
                return Optional.empty();
            }
            requireOk(path, status, body);
            try (JsonParser parser = JsonReading.parser(body)) {
                return Optional.of(reader.read(parser));
            }
        } catch (DescriptionTooLarge e) {
            throw new ContainerRuntimeException.TooLarge(path + ": " + e.getMessage());
        } catch (JsonProcessingException e) {
            throw notJson(path, e);
        } catch (BoundedInput.TooLarge e) {
            throw new ContainerRuntimeException(path + ": response larger than " + max + " bytes");
        } catch (IOException e) {
            throw new ContainerRuntimeException.Unreachable("reading " + path + ": " + e.getMessage(), e);
        }
    }

    private static ContainerRuntimeException notJson(String path, IOException e) {
        String why = e instanceof JsonProcessingException j ? j.getOriginalMessage() : e.getMessage();
        return new ContainerRuntimeException(path + ": not JSON: " + Printable.of(String.valueOf(why)));
    }

    private static void requireOk(String path, int status, InputStream body) throws IOException, ContainerRuntimeException {
        if (status / 100 != 2) {
            throw new ContainerRuntimeException(path + ": HTTP " + status + ": " + message(body.readNBytes(MAX_ERROR)));
        }
    }

    private static String message(byte[] bytes) {
        String text = new String(bytes, 0, Math.min(bytes.length, MAX_ERROR), StandardCharsets.UTF_8).trim();
        return Printable.of(text);
    }

    private static DockerHttpClient.Request get(String path) {
        return DockerHttpClient.Request.builder().method(DockerHttpClient.Request.Method.GET).path(path).build();
    }

    /** The transport reports a daemon it cannot reach as unchecked exceptions: sorted here, once. */
    private static DockerHttpClient.Response execute(DockerHttpClient client, DockerHttpClient.Request request)
            throws ContainerRuntimeException {
        try {
            return client.execute(request);
        } catch (RuntimeException e) {
            Throwable cause = e;
            while (cause.getCause() != null && !(cause instanceof IOException)) {
                cause = cause.getCause();
            }
            throw new ContainerRuntimeException.Unreachable(cause.getClass().getSimpleName() + ": " + cause.getMessage(), e);
        }
    }

    @Override
    public void close() {
        try {
            http.close();
            streamHttp.close();
        } catch (IOException ignored) {
            // Closing sockets on shutdown: nothing to report.
        }
    }
}
