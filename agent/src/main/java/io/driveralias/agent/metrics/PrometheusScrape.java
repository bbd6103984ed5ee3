package io.driveralias.agent.metrics;

/** One rendering of the registry, ready to send to a scraper. */
public record PrometheusScrape(String contentType, byte[] body) {

    /** The classic Prometheus text format, for scrapers that do not ask for anything else. */
    public static final String TEXT = "text/plain; version=0.0.4; charset=utf-8";

    /** OpenMetrics 1.0, what Prometheus asks for first. */
    public static final String OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8";
}
