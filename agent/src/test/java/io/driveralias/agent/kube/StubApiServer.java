package io.driveralias.agent.kube;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * An API server that misbehaves on purpose: it answers {@code status} to the first
 * {@code failures} requests (then 201 with the request body, as a create would), or never
 * answers at all. Records every request line and Authorization header.
 */
final class StubApiServer implements AutoCloseable {

    private final HttpServer server;
    private final ExecutorService handlers = Executors.newVirtualThreadPerTaskExecutor();
    private final CountDownLatch release = new CountDownLatch(1);
    private final boolean hang;
    private final int status;
    private int failuresLeft;
    private final List<String> requests = new ArrayList<>();
    private final List<String> authorizations = new ArrayList<>();

    private StubApiServer(boolean hang, int status, int failures) throws IOException {
        this.hang = hang;
        this.status = status;
        this.failuresLeft = failures;
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 50);
        server.setExecutor(handlers);
        server.createContext("/", this::handle);
        server.start();
    }

    /** Answers {@code status} to the first {@code failures} requests, then succeeds. */
    static StubApiServer failing(int status, int failures) throws IOException {
        return new StubApiServer(false, status, failures);
    }

    /** Accepts every request and never answers. */
    static StubApiServer hanging() throws IOException {
        return new StubApiServer(true, 0, 0);
    }

    String url() {
        return "http://" + server.getAddress().getHostString() + ":" + server.getAddress().getPort();
    }

    synchronized List<String> requests() {
        return List.copyOf(requests);
    }

    synchronized List<String> authorizations() {
        return List.copyOf(authorizations);
    }

    synchronized void awaitRequests(int count, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (requests.size() < count) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new AssertionError("expected " + count + " requests within " + timeout + ", got " + requests);
            }
            wait(Math.max(1, left / 1_000_000));
        }
    }

    private void handle(HttpExchange exchange) throws IOException {
        byte[] body;
        try (InputStream in = exchange.getRequestBody()) {
            body = in.readAllBytes();
        }
        int answer;
        synchronized (this) {
            requests.add(exchange.getRequestMethod() + " " + exchange.getRequestURI().getPath());
            authorizations.add(String.valueOf(exchange.getRequestHeaders().getFirst("Authorization")));
            notifyAll();
            answer = failuresLeft > 0 ? status : exchange.getRequestMethod().equals("POST") ? 201 : 200;
            failuresLeft--;
        }
        if (hang) {
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            exchange.close();
            return;
        }
        byte[] response = answer >= 400
                ? ("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"injected\",\"code\":"
                        + answer + "}").getBytes(StandardCharsets.UTF_8)
                : body;
        exchange.getResponseHeaders().add("Content-Type", "application/json");
        exchange.sendResponseHeaders(answer, response.length == 0 ? -1 : response.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(response);
        }
    }

    @Override
    public void close() {
        release.countDown();
        server.stop(0);
        handlers.shutdownNow();
    }
}
