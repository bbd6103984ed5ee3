package io.driveralias.agent.http;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.driveralias.agent.metrics.PrometheusScrape;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code /metrics}, {@code /healthz} and {@code /readyz} on the JDK's built-in HTTP server.
 * Two threads answer; a scrape renders the registry in memory, a probe reads two booleans.
 */
public final class AgentHttpServer implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(AgentHttpServer.class);

    private static final int THREADS = 2;
    private static final int BACKLOG = 16;
    private static final String TEXT = "text/plain; charset=utf-8";

    private final HttpServer server;
    private final ExecutorService executor;

    /**
     * Binds {@code address} at once (port 0 picks a free port, see {@link #port()}); requests
     * are answered after {@link #start()}.
     */
    public AgentHttpServer(InetSocketAddress address, MetricsSource metrics, AgentStatus status) throws IOException {
        server = HttpServer.create(address, BACKLOG);
        executor = Executors.newFixedThreadPool(THREADS, Thread.ofPlatform().name("http-", 1).daemon().factory());
        server.setExecutor(executor);
        server.createContext("/", exchange -> answer(exchange, metrics, status));
    }

    public void start() {
        server.start();
        log.info("listening on {} for /metrics, /healthz and /readyz", server.getAddress());
    }

    /** The bound port: the one asked for, or the one the system chose for port 0. */
    public int port() {
        return server.getAddress().getPort();
    }

    /** Stops accepting, gives requests in flight a second to finish, then stops the threads. */
    @Override
    public void close() {
        server.stop(1);
        executor.shutdownNow();
        try {
            executor.awaitTermination(1, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void answer(HttpExchange exchange, MetricsSource metrics, AgentStatus status) throws IOException {
        try (exchange) {
            try {
                route(exchange, metrics, status);
            } catch (RuntimeException e) {
                log.warn("{} {} failed", exchange.getRequestMethod(), exchange.getRequestURI(), e);
                if (exchange.getResponseCode() < 0) {
                    send(exchange, 500, TEXT, "internal error\n");
                }
            }
        }
    }

    private static void route(HttpExchange exchange, MetricsSource metrics, AgentStatus status) throws IOException {
        String method = exchange.getRequestMethod();
        if (!method.equals("GET") && !method.equals("HEAD")) {
            exchange.getResponseHeaders().set("Allow", "GET, HEAD");
            send(exchange, 405, TEXT, "method not allowed\n");
            return;
        }
        switch (exchange.getRequestURI().getPath()) {
            case "/metrics" -> {
                PrometheusScrape scrape = metrics.scrape(exchange.getRequestHeaders().getFirst("Accept"));
                send(exchange, 200, scrape.contentType(), scrape.body());
            }
            case "/healthz" -> probe(exchange, status::alive);
            case "/readyz" -> probe(exchange, status::ready);
            default -> send(exchange, 404, TEXT, "not found: /metrics, /healthz, /readyz\n");
        }
    }

    private static void probe(HttpExchange exchange, BooleanSupplier check) throws IOException {
        if (check.getAsBoolean()) {
            send(exchange, 200, TEXT, "ok\n");
        } else {
            send(exchange, 503, TEXT, "not ok\n");
        }
    }

    private static void send(HttpExchange exchange, int code, String contentType, String body) throws IOException {
        send(exchange, code, contentType, body.getBytes(StandardCharsets.UTF_8));
    }

    private static void send(HttpExchange exchange, int code, String contentType, byte[] body) throws IOException {
        exchange.getResponseHeaders().set("Content-Type", contentType);
        exchange.getResponseHeaders().set("Cache-Control", "no-store");
        if (exchange.getRequestMethod().equals("HEAD")) {
            exchange.sendResponseHeaders(code, -1);
            return;
        }
        // For this server a length of 0 means "chunked"; -1 means no body.
        exchange.sendResponseHeaders(code, body.length == 0 ? -1 : body.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
        }
    }
}
