package io.driveralias.agent.http;

import io.driveralias.agent.metrics.PrometheusScrape;
import io.driveralias.agent.webconfig.BasicAuth;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The answer to a request whose head is complete and whose credentials, where asked, are checked. */
final class Responder {

    private static final Logger log = LoggerFactory.getLogger(Responder.class);
    /** Scrapes render the whole registry; a burst of them must not take every CPU. */
    private static final int CONCURRENT_RENDERS = 2;

    private final MetricsSource metrics;
    private final AgentStatus status;
    private final ConnectionSlots slots;
    private final Duration renderWait;
    private final Semaphore renders = new Semaphore(CONCURRENT_RENDERS);

    /** {@code renderWait}: how long a scrape waits for a turn to render. */
    Responder(MetricsSource metrics, AgentStatus status, ConnectionSlots slots, Duration renderWait) {
        this.metrics = metrics;
        this.status = status;
        this.slots = slots;
        this.renderWait = renderWait;
    }

    void respond(HttpExchange exchange, ConnectionSlots.Slot slot, HttpExchange.Request request, BasicAuth.Verdict verdict)
            throws IOException {
        if (request == null) {
            exchange.sendText("GET", 400, "bad request");
            return;
        }
        String method = request.method();
        String path = request.path();
        switch (verdict) {
            case DENIED -> {
                exchange.sendText(method, 401, "unauthorized", "WWW-Authenticate", "Basic realm=\"driver-alias-agent\"");
                return;
            }
            case BUSY -> {
                // Over its share of the password checks (bcrypt is slow on purpose): come back.
                exchange.sendText(method, 429, "too many password checks", "Retry-After", "1");
                return;
            }
            case ALLOWED -> { }
        }
        if (!method.equals("GET") && !method.equals("HEAD")) {
            exchange.sendText(method, 405, "method not allowed", "Allow", "GET, HEAD");
            return;
        }
        try {
            switch (path) {
                case "/metrics" -> scrape(exchange, slot, method, request.header("accept"));
                case "/healthz" -> probe(exchange, method, status::alive);
                case "/readyz" -> probe(exchange, method, status::ready);
                default -> exchange.sendText(method, 404, "not found: /metrics, /healthz, /readyz");
            }
        } catch (RuntimeException e) {
            log.warn("{} {} failed", method, path, e);
            exchange.sendText(method, 500, "internal error");
        }
    }

    private void scrape(HttpExchange exchange, ConnectionSlots.Slot slot, String method, String accept) throws IOException {
        if (!slots.scraping(slot)) {
            // A slow reader stretches a scrape to the exchange deadline: a few per address, or
            // many addresses' slow scrapes would pin every slot and keep the probes out.
            exchange.sendText(method, 503, "too many scrapes at once");
            return;
        }
        boolean permitted;
        try {
            permitted = renders.tryAcquire(renderWait.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        if (!permitted) {
            exchange.sendText(method, 503, "too many scrapes at once");
            return;
        }
        PrometheusScrape scrape;
        try {
            scrape = metrics.scrape(accept);
        } finally {
            renders.release();
        }
        exchange.send(method, 200, scrape.contentType(), scrape.body());
    }

    private static void probe(HttpExchange exchange, String method, BooleanSupplier check) throws IOException {
        boolean ok = check.getAsBoolean();
        exchange.sendText(method, ok ? 200 : 503, ok ? "ok" : "not ok");
    }
}
