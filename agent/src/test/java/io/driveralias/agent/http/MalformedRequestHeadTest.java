package io.driveralias.agent.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.metrics.PrometheusScrape;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Request heads at the edge of the parser get a 400 like any malformed head. A head that is
 * only its blank line once made {@code Request.parse} index an empty array
 * ({@code "\r\n".split("\r\n")} is empty), and the connection ended with no answer.
 */
class MalformedRequestHeadTest {

    private AgentHttpServer server;

    @BeforeEach
    void start() throws IOException {
        FakeAgentStatus status = new FakeAgentStatus();
        status.alive = true;
        server = new AgentHttpServer(new InetSocketAddress("127.0.0.1", 0),
                accept -> new PrometheusScrape("text/plain", "up_test 1\n".getBytes(StandardCharsets.UTF_8)), status);
        server.start();
    }

    @AfterEach
    void stop() {
        server.close();
    }

    @ParameterizedTest
    @ValueSource(strings = {"\r\n\r\n", "\r\n\r\n\r\n", "GET /healthz\r\n\r\n", "GET  /healthz HTTP/1.1\r\n\r\n"})
    void aMalformedHeadGetsA400(String head) throws Exception {
        try (Socket s = new Socket(InetAddress.getByName("127.0.0.1"), server.port())) {
            s.setSoTimeout(5000);
            s.getOutputStream().write(head.getBytes(StandardCharsets.ISO_8859_1));
            String answer = new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
            assertThat(answer).as("the answer to %s", head.replace("\r\n", "\\r\\n")).startsWith("HTTP/1.1 400");
        }
    }
}
