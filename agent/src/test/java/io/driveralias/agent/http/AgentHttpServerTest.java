package io.driveralias.agent.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.driveralias.agent.metrics.PrometheusScrape;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class AgentHttpServerTest {

    private final FakeAgentStatus status = new FakeAgentStatus();
    private final AtomicReference<String> lastAccept = new AtomicReference<>();
    private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private AgentHttpServer server;

    @BeforeEach
    void start() throws IOException {
        MetricsSource metrics = accept -> {
            lastAccept.set(accept);
            if ("boom".equals(accept)) {
                throw new IllegalStateException("registry broken");
            }
            return new PrometheusScrape("text/plain; version=0.0.4; charset=utf-8",
                    "up_test 1\n".getBytes(StandardCharsets.UTF_8));
        };
        server = new AgentHttpServer(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), metrics, status);
        server.start();
    }

    @AfterEach
    void stop() {
        server.close();
        client.close();
    }

    @Test
    void reportsThePortItGotForPortZero() {
        assertThat(server.port()).isPositive();
    }

    @Test
    void healthzFollowsAlive() throws Exception {
        status.alive = true;
        assertThat(get("/healthz").statusCode()).isEqualTo(200);

        status.alive = false;
        assertThat(get("/healthz").statusCode()).isEqualTo(503);
    }

    @Test
    void readyzFollowsReadyAlone() throws Exception {
        status.alive = true;
        status.ready = false;
        assertThat(get("/readyz").statusCode()).isEqualTo(503);

        status.ready = true;
        HttpResponse<String> ready = get("/readyz");
        assertThat(ready.statusCode()).isEqualTo(200);
        assertThat(ready.headers().firstValue("Content-Type")).hasValue("text/plain; charset=utf-8");
    }

    @Test
    void servesTheMetricsInTheFormatAskedFor() throws Exception {
        HttpResponse<String> response = client.send(request("/metrics")
                .header("Accept", "application/openmetrics-text;version=1.0.0").build(), HttpResponse.BodyHandlers.ofString());

        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().firstValue("Content-Type")).hasValue("text/plain; version=0.0.4; charset=utf-8");
        assertThat(response.body()).isEqualTo("up_test 1\n");
        assertThat(lastAccept.get()).isEqualTo("application/openmetrics-text;version=1.0.0");
    }

    @Test
    void answersHeadWithoutABody() throws Exception {
        status.alive = true;
        HttpResponse<String> response = client.send(request("/healthz").HEAD().build(), HttpResponse.BodyHandlers.ofString());

        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.body()).isEmpty();
    }

    @Test
    void refusesOtherMethods() throws Exception {
        HttpResponse<String> response = client.send(request("/metrics").POST(HttpRequest.BodyPublishers.ofString("x")).build(),
                HttpResponse.BodyHandlers.ofString());

        assertThat(response.statusCode()).isEqualTo(405);
        assertThat(response.headers().firstValue("Allow")).hasValue("GET, HEAD");
    }

    @Test
    void knowsNoOtherPaths() throws Exception {
        assertThat(get("/").statusCode()).isEqualTo(404);
        assertThat(get("/metrics/extra").statusCode()).isEqualTo(404);
        assertThat(get("/healthz/").statusCode()).isEqualTo(404);
    }

    @Test
    void aBrokenRegistryIsAServerErrorAndTheServerGoesOn() throws Exception {
        HttpResponse<String> broken = client.send(request("/metrics").header("Accept", "boom").build(),
                HttpResponse.BodyHandlers.ofString());

        assertThat(broken.statusCode()).isEqualTo(500);
        assertThat(get("/metrics").statusCode()).isEqualTo(200);
    }

    @Test
    void stopsListeningWhenClosed() {
        server.close();

        assertThatThrownBy(() -> get("/healthz")).isInstanceOf(ConnectException.class);
    }

    private HttpResponse<String> get(String path) throws IOException, InterruptedException {
        return client.send(request(path).build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpRequest.Builder request(String path) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path)).timeout(Duration.ofSeconds(10));
    }
}
