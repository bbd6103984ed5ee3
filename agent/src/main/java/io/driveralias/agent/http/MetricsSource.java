package io.driveralias.agent.http;

import io.driveralias.agent.metrics.PrometheusScrape;

/** What {@code GET /metrics} serves. Implemented by the metrics registry. */
@FunctionalInterface
public interface MetricsSource {

    /** Renders the metrics in the best format the request's {@code Accept} header (maybe null) allows. */
    PrometheusScrape scrape(String acceptHeader);
}
