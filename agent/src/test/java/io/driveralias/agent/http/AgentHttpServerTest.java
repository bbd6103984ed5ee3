package io.driveralias.agent.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.driveralias.agent.metrics.PrometheusScrape;
import io.driveralias.agent.testing.Timing;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

@Timing
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

    @Test
    void healthzAnswersWithinASecondWhile200HostileConnectionsAreHeld() throws Exception {
        status.alive = true;
        List<Socket> idle = new ArrayList<>();
        List<Socket> slow = new ArrayList<>();
        ScheduledExecutorService dribble = Executors.newSingleThreadScheduledExecutor();
        try {
            // From 200 addresses: one address may hold only its share (see the test below).
            for (int i = 0; i < 100; i++) {
                idle.add(connectFrom(2 * i)); // connected, sending nothing
                Socket s = connectFrom(2 * i + 1);
                s.getOutputStream().write("GET /healthz HTTP/1.1\r\nHost: x\r\n".getBytes(StandardCharsets.US_ASCII));
                slow.add(s);
            }
            // Slowloris: one more header byte per connection every 200 ms, never the blank line.
            dribble.scheduleAtFixedRate(() -> slow.forEach(s -> {
                try {
                    s.getOutputStream().write('X');
                } catch (IOException ignored) {
                    // closed by the server: also fine
                }
            }), 0, 200, TimeUnit.MILLISECONDS);
            awaitOpenConnections(server, 200);

            long worst = 0;
            for (int i = 0; i < 20; i++) {
                long start = System.nanoTime();
                HttpResponse<String> response = get("/healthz");
                long took = System.nanoTime() - start;
                worst = Math.max(worst, took);
                assertThat(response.statusCode()).isEqualTo(200);
            }
            System.out.printf("/healthz with 100 idle + 100 slow-header connections held: worst of 20 %.1f ms%n",
                    worst / 1e6);
            assertThat(Duration.ofNanos(worst)).isLessThan(Duration.ofSeconds(1));
            assertThat(server.openConnections()).isGreaterThanOrEqualTo(200);
        } finally {
            dribble.shutdownNow();
            closeAll(idle);
            closeAll(slow);
        }
    }

    @Test
    void aClientThatNeverFinishesItsHeaderIsCutAtTheDeadline() throws Exception {
        try (AgentHttpServer strict = strictServer(new AgentHttpServer.Limits(16, Duration.ofMillis(500), Duration.ofSeconds(5), 8192));
             Socket s = new Socket(InetAddress.getLoopbackAddress(), strict.port())) {
            s.getOutputStream().write("GET /healthz HTTP/1.1\r\n".getBytes(StandardCharsets.US_ASCII));
            s.setSoTimeout(5000);
            long start = System.nanoTime();
            assertThat(s.getInputStream().read()).isEqualTo(-1);
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(2));
            awaitOpenConnections(strict, 0);
        }
    }

    @Test
    void aScrapeThatIsNeverReadIsCutAtTheExchangeDeadline() throws Exception {
        byte[] big = new byte[64 << 20]; // far more than the socket buffers hold
        MetricsSource huge = accept -> new PrometheusScrape("text/plain", big);
        try (AgentHttpServer strict = new AgentHttpServer(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                huge, status, new AgentHttpServer.Limits(16, Duration.ofSeconds(1), Duration.ofSeconds(1), 8192))) {
            strict.start();
            try (Socket reader = new Socket(InetAddress.getLoopbackAddress(), strict.port())) {
                reader.setReceiveBufferSize(4096);
                reader.getOutputStream().write("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                awaitOpenConnections(strict, 1);
                long start = System.nanoTime();
                awaitOpenConnections(strict, 0); // never read: the server gives up, the thread ends
                System.out.printf("unread 64 MiB scrape cut after %.0f ms%n", (System.nanoTime() - start) / 1e6);
            }
        }
    }

    @Test
    void aNewcomerPastTheCapEvictsTheOldestIdleConnectionAndTheCapFreesItself() throws Exception {
        status.alive = true;
        try (AgentHttpServer strict = strictServer(new AgentHttpServer.Limits(4, Duration.ofSeconds(3), Duration.ofSeconds(5), 8192))) {
            List<Socket> held = new ArrayList<>();
            try {
                for (int i = 0; i < 4; i++) {
                    held.add(new Socket(InetAddress.getLoopbackAddress(), strict.port()));
                }
                awaitOpenConnections(strict, 4);
                try (Socket extra = new Socket(InetAddress.getLoopbackAddress(), strict.port())) {
                    held.getFirst().setSoTimeout(5000);
                    long start = System.nanoTime();
                    assertThat(readOrReset(held.getFirst())).as("the oldest idle one makes room").isEqualTo(-1);
                    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(2));
                    extra.getOutputStream().write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                    extra.setSoTimeout(5000);
                    assertThat(new String(extra.getInputStream().readAllBytes(), StandardCharsets.US_ASCII))
                            .startsWith("HTTP/1.1 200 ");
                }
                awaitOpenConnections(strict, 0); // the idle ones hit the header deadline
                HttpResponse<String> ok = client.send(HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + strict.port() + "/healthz")).build(), HttpResponse.BodyHandlers.ofString());
                assertThat(ok.statusCode()).isEqualTo(200);
            } finally {
                closeAll(held);
            }
        }
    }

    @Test
    void anOversizedHeaderIsRefused() throws Exception {
        try (Socket s = connect()) {
            s.getOutputStream().write(("GET /healthz HTTP/1.1\r\nX-Pad: " + "a".repeat(10_000) + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            s.setSoTimeout(5000);
            String answer = new String(s.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
            assertThat(answer).startsWith("HTTP/1.1 431 ");
        }
    }

    @Test
    void queryStringsAndHttp10AreServed() throws Exception {
        status.alive = true;
        try (Socket s = connect()) {
            s.getOutputStream().write("GET /healthz?verbose=1 HTTP/1.0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            s.setSoTimeout(5000);
            String answer = new String(s.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
            assertThat(answer).startsWith("HTTP/1.1 200 OK\r\n").endsWith("\r\n\r\nok\n");
        }
    }

    private AgentHttpServer strictServer(AgentHttpServer.Limits limits) throws IOException {
        AgentHttpServer strict = new AgentHttpServer(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                accept -> new PrometheusScrape("text/plain", new byte[0]), status, limits);
        strict.start();
        return strict;
    }

    /** A connection from another loopback address, 127.0.1.x or 127.0.2.x. */
    private Socket connectFrom(int n) throws IOException {
        return new Socket(InetAddress.getLoopbackAddress(), server.port(),
                InetAddress.getByName("127.0." + (1 + n / 250) + "." + (1 + n % 250)), 0);
    }

    private Socket connect() throws IOException {
        return new Socket(InetAddress.getLoopbackAddress(), server.port());
    }

    /** -1 for an orderly close; a reset (the server closed before the client wrote) counts the same. */
    private static int readOrReset(Socket s) throws IOException {
        try {
            return s.getInputStream().read();
        } catch (SocketException reset) {
            return -1;
        }
    }

    private static void awaitOpenConnections(AgentHttpServer server, int expected) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (expected == 0 ? server.openConnections() != 0 : server.openConnections() < expected) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("open connections: " + server.openConnections() + ", expected " + expected);
            }
            Thread.sleep(20);
        }
    }

    private static void closeAll(List<Socket> sockets) {
        for (Socket s : sockets) {
            try {
                s.close();
            } catch (IOException ignored) {
                // test cleanup
            }
        }
    }

    private HttpResponse<String> get(String path) throws IOException, InterruptedException {
        return client.send(request(path).build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpRequest.Builder request(String path) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path)).timeout(Duration.ofSeconds(10));
    }

    @Test
    void oneClientHoldingEveryConnectionItCanDoesNotLockOutTheProbes() throws Exception {
        status.alive = true;
        try (AgentHttpServer capped = new AgentHttpServer(new InetSocketAddress("0.0.0.0", 0), accept -> null, status,
                new AgentHttpServer.Limits(64, Duration.ofSeconds(10), Duration.ofSeconds(30), 8192, 8))) {
            capped.start();
            List<Socket> hostile = new ArrayList<>();
            try {
                // One pod opens far more connections than the whole server holds, and idles on them.
                for (int i = 0; i < 100; i++) {
                    hostile.add(new Socket(InetAddress.getByName("127.0.0.1"), capped.port()));
                }
                awaitOpenConnections(capped, 8);
                Thread.sleep(200);
                assertThat(capped.openConnections()).as("one address holds at most its share, evicting its own").isEqualTo(8);
                // The kubelet probes from another address (the node's).
                long start = System.nanoTime();
                try (Socket probe = new Socket(InetAddress.getByName("127.0.0.1"), capped.port(),
                        InetAddress.getByName("127.0.0.2"), 0)) {
                    probe.getOutputStream().write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                            .getBytes(StandardCharsets.US_ASCII));
                    String answer = new String(probe.getInputStream().readNBytes(12), StandardCharsets.US_ASCII);
                    assertThat(answer).isEqualTo("HTTP/1.1 200");
                }
                assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(1));
            } finally {
                closeAll(hostile);
            }
        }
    }
}
