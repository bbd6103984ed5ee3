package io.driveralias.agent.metrics;

import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;

/** One rendering of the registry, ready to send to a scraper. */
public record PrometheusScrape(String contentType, byte[] body) {

    /** The classic Prometheus text format, for scrapers that do not ask for anything else. */
    public static final String TEXT = "text/plain; version=0.0.4; charset=utf-8";

    /** OpenMetrics 1.0, what Prometheus asks for first. */
    public static final String OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8";

    /** The whole registry in OpenMetrics if {@code acceptHeader} asks for it, else in the Prometheus text format. */
    static PrometheusScrape of(PrometheusMeterRegistry registry, String acceptHeader) {
        String contentType = acceptHeader != null && acceptHeader.contains("application/openmetrics-text")
                ? OPENMETRICS
                : TEXT;
        ByteArrayOutputStream body = new ByteArrayOutputStream(32 * 1024);
        try {
            // The registry picks its writer from this string just as from an Accept header.
            registry.scrape(body, contentType);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return new PrometheusScrape(contentType, body.toByteArray());
    }
}
